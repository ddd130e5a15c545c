//go:build !linux

package main

// watchRSS reports no peak resident set here (0).
func watchRSS(int) (stop func() int64) { return func() int64 { return 0 } }
