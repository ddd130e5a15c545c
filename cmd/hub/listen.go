package main

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"syscall"

	"github.com/a6afc2ce/hermes-hub/config"
)

// listenFix is how an operator frees the panel's address or moves it.
const listenFix = "stop it, or choose another address with `hub serve " + config.ListenFlag + " ADDR`, " + config.ListenEnv + "=ADDR or web.listen"

// listenFailed explains why the web listener could not open on addr (err
// is web.Server.Listen's): an address in use names the process that holds
// it, when this system tells, and how to choose another.
func listenFailed(addr string, err error) error {
	if !errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("web: %w", err) // the listen or the TLS certificate, as net and tls say it
	}
	return fmt.Errorf("web.listen: %s; %s", addrInUse(addr), listenFix)
}

// addrInUse says that addr is in use, and by which process when this
// system tells.
func addrInUse(addr string) string {
	msg := addr + " is in use"
	if pid, name := portHolder(addr); pid > 0 {
		msg += " by process " + strconv.Itoa(pid)
		if name != "" {
			msg += " (" + name + ")"
		}
	}
	return msg
}

// listenPort is the TCP port of a host:port address, or -1.
func listenPort(addr string) int {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		return -1
	}
	n, err := strconv.Atoi(p)
	if err != nil || n < 0 || n > 65535 {
		return -1
	}
	return n
}
