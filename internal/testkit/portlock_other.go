//go:build !unix

package testkit

// claimPort holds nothing where the system has no record locks: the bind
// check alone decides.
func claimPort(int) bool { return true }
