package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMirrorRetention: mirror.retention's defaults per kind; the older
// keep_runs and keep_age set both kinds' values that retention leaves out
// (negative: no limit); min_runs follows a smaller keep_runs; bad values
// are refused naming the key and what is accepted.
func TestMirrorRetention(t *testing.T) {
	type values struct {
		age   time.Duration
		runs  int
		bytes int64
		min   int
	}
	load := func(t *testing.T, yml string) (*Config, error) {
		t.Helper()
		p := filepath.Join(t.TempDir(), "hub.yml")
		os.WriteFile(p, []byte(yml), 0o600)
		return LoadWith(p, env(nil))
	}
	of := func(r RunRetention) values {
		a, n, b, m := r.Values()
		return values{a, n, b, m}
	}
	for _, tc := range []struct {
		name       string
		yml        string
		serve, cli values
	}{
		{"defaults", "", values{720 * time.Hour, 50, 0, 3}, values{720 * time.Hour, 1000, 256 << 20, 0}},
		{"older keys", "mirror:\n  keep_runs: 3\n  keep_age: 48h\n", values{48 * time.Hour, 3, 0, 3}, values{48 * time.Hour, 3, 256 << 20, 0}},
		{"older keep_runs below min_runs", "mirror:\n  keep_runs: 1\n", values{720 * time.Hour, 1, 0, 1}, values{720 * time.Hour, 1, 256 << 20, 0}},
		{"older keys off", "mirror:\n  keep_runs: -1\n  keep_age: -1h\n", values{0, 0, 0, 3}, values{0, 0, 256 << 20, 0}},
		{"retention wins", "mirror:\n  keep_runs: 3\n  retention:\n    cli: {keep_runs: 10, keep_bytes: 0}\n", values{720 * time.Hour, 3, 0, 3}, values{720 * time.Hour, 10, 0, 0}},
		{"every key", "mirror:\n  retention:\n    serve: {keep_age: 0s, keep_runs: 0, keep_bytes: 1GiB, min_runs: 10}\n    cli: {keep_age: 24h, keep_runs: 5, keep_bytes: 1MiB, min_runs: 5}\n",
			values{0, 0, 1 << 30, 10}, values{24 * time.Hour, 5, 1 << 20, 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := load(t, tc.yml)
			if err != nil {
				t.Fatal(err)
			}
			if got := of(cfg.Mirror.Retention.Serve); got != tc.serve {
				t.Errorf("serve %+v, want %+v", got, tc.serve)
			}
			if got := of(cfg.Mirror.Retention.CLI); got != tc.cli {
				t.Errorf("cli %+v, want %+v", got, tc.cli)
			}
		})
	}
	for _, tc := range []struct{ name, yml, want string }{
		{"short age", "mirror:\n  retention:\n    cli: {keep_age: 30m}\n", "mirror.retention.cli.keep_age: 30m0s is out of range (accepted: 0 for any age, or at least 1h0m0s"},
		{"short older age", "mirror:\n  keep_age: 30m\n", "mirror.keep_age sets it when it is left out"},
		{"negative runs", "mirror:\n  retention:\n    serve: {keep_runs: -2}\n", "mirror.retention.serve.keep_runs: -2 is out of range (accepted: 0 for any number"},
		{"small size", "mirror:\n  retention:\n    serve: {keep_bytes: 10KiB}\n", "mirror.retention.serve.keep_bytes: 10KiB is out of range (accepted: 0 for any size, or at least 1MiB"},
		{"min over keep", "mirror:\n  retention:\n    serve: {keep_runs: 3, min_runs: 5}\n", "mirror.retention.serve.min_runs: 5 is more than keep_runs, 3 (accepted: 0 to keep_runs)"},
		{"negative min", "mirror:\n  retention:\n    cli: {min_runs: -1}\n", "mirror.retention.cli.min_runs: -1 is out of range (accepted: 0 or more)"},
		{"unknown kind", "mirror:\n  retention:\n    api: {keep_runs: 3}\n", `unknown key "api" in mirror.retention (accepted: serve, cli)`},
		{"unknown key", "mirror:\n  retention:\n    cli: {keep: 3}\n", `unknown key "keep" in mirror.retention.cli (accepted: keep_age, keep_runs, keep_bytes, min_runs)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := load(t, tc.yml); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}
