package config

import (
	"strings"
	"testing"
)

func TestDockerHost(t *testing.T) {
	const head = "workspaces:\n  s:\n    path: ./s\n    destination:\n      kind: docker\n      image: x\n"
	for _, c := range []struct{ host, want string }{
		{"unix:///var/run/docker.sock", ""},
		{"unix:///tmp/d/docker.sock", ""},
		{"tcp://127.0.0.1:2375", ""},
		{"tcp://[::1]:2375", ""},
		{"tcp://localhost:2375", ""},
		{"tcp://10.0.0.5:2375", `line 7: workspaces.s.destination.docker_host: "tcp://10.0.0.5:2375" is not a loopback address`},
		{"tcp://127.0.0.1", `is not tcp://HOST:PORT`},
		{"unix://relative.sock", `is not unix:// followed by an absolute path`},
		{"ssh://me@host", `has scheme "ssh"`},
		{"/var/run/docker.sock", `has scheme ""`},
	} {
		t.Run(c.host, func(t *testing.T) {
			cfg, err := loadYAML(t, head+"      docker_host: "+c.host+"\n")
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if wc, _ := cfg.WorkspaceByName("s"); wc.Destination.DockerHost != c.host {
					t.Fatalf("docker_host %q", wc.Destination.DockerHost)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "accepted: empty for DOCKER_HOST") {
				t.Fatalf("got %v, want %q", err, c.want)
			}
		})
	}
	if _, err := loadYAML(t, "workspaces:\n  s:\n    path: ./s\n    destination:\n      docker_host: unix:///x\n"); err == nil || !strings.Contains(err.Error(), "docker_host only apply to kind docker") {
		t.Fatalf("docker_host on local: %v", err)
	}
}
