package main

import (
	"fmt"
	"runtime/debug"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = ""

func hubVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

func runVersion(env *cliEnv, args []string) error {
	f := newFlags(env, "version", "hub version")
	if _, err := f.parse(args); err != nil {
		return err
	}
	bi, _ := debug.ReadBuildInfo()
	goVersion := ""
	if bi != nil {
		goVersion = bi.GoVersion
	}
	fmt.Fprintf(env.stdout, "hub %s (%s)\n", hubVersion(), goVersion)
	return nil
}
