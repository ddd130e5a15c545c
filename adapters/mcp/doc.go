// Package mcp offers the hub's verbs to Model Context Protocol clients:
// over stdio (`hub mcp`) and over streamable HTTP (/mcp on the web
// listener), through the official Go SDK.
//
// Every tool is a verb, named with '_' for '.' (fs_readFile), with JSON
// Schemas derived from the verb's Go types, a description from its summary
// and annotations from one table (annotations.go). A tools/call is a turn:
// it goes through the hub's Execute, so access is checked and the exchange
// is mirrored like any API call, under the turn id
// mcp.<session>.<request>. A tools/list shows the tools the caller's
// identity may run.
//
// The workspace's files are resources, hub:///<path> (resources.go): a
// listing is an fs.find turn, a read an fs.readFile turn, a completion of
// the path template an fs.listDir turn, and a subscription a chain of
// fs.watch turns (subscriptions.go), each through the same Execute as a
// tool call.
//
// Over stdio the package frames lines itself (stdio.go): a line that is
// not a message is answered with an error and skipped, and no line is read
// while DefaultMaxPending messages are in progress. Over HTTP (http.go)
// wrong tokens count against the web listener's throttle and no identity
// holds more than its share of sessions and open requests (limits.go).
package mcp
