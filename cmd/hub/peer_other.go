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

// peerTrusted trusts no peer here.
func peerTrusted(*net.UnixConn, int) bool { return false }
