package config

import (
	"strings"
	"testing"
	"time"
)

func TestUploadsAndFileLimits(t *testing.T) {
	c := Default()
	if u := c.Uploads; u.Dir != "uploads" || u.MaxBytes != 50<<20 || u.Timeout.D() != 5*time.Minute {
		t.Fatalf("uploads defaults: %+v", u)
	}
	if c.Discord.MaxFileBytes != 10<<20 {
		t.Fatalf("discord.max_file_bytes default: %d", c.Discord.MaxFileBytes)
	}
	for _, tc := range []struct{ name, yml, want string }{
		{"absolute dir", "uploads:\n  dir: /srv/in\n", `config FILE: line 2: uploads.dir: "/srv/in" must be relative to the workspace, with / between its parts (for example uploads or inbox/files)`},
		{"climbing dir", "uploads:\n  dir: ../in\n", `config FILE: line 2: uploads.dir: "../in" must be a clean path inside the workspace (no .., no empty or . parts; for example uploads)`},
		{"unclean dir", "uploads:\n  dir: a//b\n", `uploads.dir: "a//b" must be a clean path inside the workspace`},
		{"no size", "uploads:\n  max_bytes: 0\n", ""},
		{"short timeout", "uploads:\n  timeout: 10ms\n", `config FILE: line 2: uploads.timeout: 10ms is under a second (for example 5m)`},
		{"discord limit", "discord:\n  max_file_bytes: 1GiB\n", `config FILE: line 2: discord.max_file_bytes: 1073741824 is out of range (accepted: 1 byte to 500MiB; Discord's limit for your servers, 10MiB without boosts)`},
		{"all set", "uploads:\n  dir: inbox/files\n  max_bytes: 2MiB\n  timeout: 30s\ndiscord:\n  max_file_bytes: 25MiB\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := load(t, tc.yml, nil)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(strings.ReplaceAll(err.Error(), p, "FILE"), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}
