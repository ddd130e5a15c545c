//go:build !linux && !darwin

package main

import (
	"fmt"
	"net"
	"runtime"
)

// peerCheckSupported refuses the admin socket where the hub cannot tell
// which user a connecting process runs as: without that check any local
// user who reaches the socket could administer the hub.
func peerCheckSupported() error {
	return fmt.Errorf("the admin socket is not supported on %s: the hub cannot check which user a connecting process runs as (peer credentials); run the hub on Linux or macOS", runtime.GOOS)
}

// peerUID never matches a uid: no peer is trusted here.
func peerUID(*net.UnixConn) int { return -2 }
