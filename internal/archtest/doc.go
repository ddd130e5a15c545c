// Package archtest keeps the layers of docs/architecture.md. Its test
// (architecture_test.go) holds the rules of that page as a table, package by
// package: what each may import, what it may never reach however far down
// its imports go. The test checks every rule against the import graph `go
// list` reports for linux, darwin and windows, and each broken rule names
// the importing package, the forbidden import and the path through which it
// arrives. Each rule's sentence must also appear, word for word, in
// docs/architecture.md, so the page and the test cannot drift apart.
package archtest
