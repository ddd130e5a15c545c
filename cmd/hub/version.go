package main

import (
	"encoding/json"
	"fmt"
	"runtime/debug"
	"strings"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = ""

// revision is the VCS revision set at build time (-X main.revision=…) for
// builds where the go tool records none: a linked git worktree, whose .git
// is a file the go tool does not recognise. What the toolchain records wins.
var revision = ""

func hubVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// buildInfo is what `hub version` tells: the module version and the VCS
// revision the binary was built from, when the build recorded them.
type buildInfo struct {
	Version   string `json:"version"`
	Go        string `json:"go"`
	Revision  string `json:"revision,omitempty"`
	Time      string `json:"time,omitempty"`
	Modified  bool   `json:"modified,omitempty"`
	BuildInfo bool   `json:"build_info"` // false: the binary carries none
}

func readBuildInfo() buildInfo {
	out := buildInfo{Version: hubVersion(), Revision: revision}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return out
	}
	out.BuildInfo, out.Go = true, bi.GoVersion
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			out.Revision = s.Value
		case "vcs.time":
			out.Time = s.Value
		case "vcs.modified":
			out.Modified = s.Value == "true"
		}
	}
	return out
}

func (b buildInfo) String() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "hub %s", b.Version)
	if b.Go != "" {
		fmt.Fprintf(&sb, " (%s)", b.Go)
	}
	if b.Revision != "" {
		fmt.Fprintf(&sb, "\nrevision %s", b.Revision)
		if b.Modified {
			sb.WriteString(" (modified)")
		}
		if b.Time != "" {
			fmt.Fprintf(&sb, "\ncommitted %s", b.Time)
		}
	}
	return sb.String()
}

func runVersion(env *cliEnv, args []string) error {
	f := newFlags(env, "version", "hub version [--json]")
	asJSON := f.Bool("json", false, "print the version, Go version and VCS revision as JSON")
	if _, err := f.parse(args); err != nil {
		return err
	}
	b := readBuildInfo()
	if *asJSON {
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(b)
	}
	fmt.Fprintln(env.stdout, b)
	return nil
}
