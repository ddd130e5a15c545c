package lab

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEveryScenarioLoads(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("scenarios", "*.yml"))
	if len(files) < 12 {
		t.Fatalf("%d scenarios checked in, want at least 12", len(files))
	}
	soak := 0
	for _, f := range files {
		sc, err := LoadScenario(f)
		if err != nil {
			t.Error(err)
			continue
		}
		if sc.Soak != nil {
			soak++
		}
	}
	if soak == 0 {
		t.Error("no soak scenario")
	}
}

func TestParseScenarioRefusesBadInput(t *testing.T) {
	const head = "name: x\ndescription: d\n"
	cases := []struct {
		name, yaml, want string
	}{
		{"unknown key", head + "steps:\n  - start: {}\n    typo: 1\n", "field typo not found"},
		{"no description", "name: x\nsteps:\n  - start: {}\n", "description is empty"},
		{"first step not start", head + "steps:\n  - wait: {for: 1s}\n", "first step must be start"},
		{"two kinds in a step", head + "steps:\n  - start: {}\n    stop: {}\n", "exactly one of"},
		{"unknown platform", head + "steps:\n  - start: {}\n  - traffic: {platform: irc, turns: 1, actions: [whoami]}\n", `traffic.platform "irc" is not accepted`},
		{"unknown action", head + "steps:\n  - start: {}\n  - traffic: {platform: web, turns: 1, actions: [dance]}\n", `traffic action "dance" is not accepted (accepted: big, box, box-long, exists, getfile, insert, long, remote-long, remote-write, upload, whoami, write)`},
		{"remote action without nodes", head + "steps:\n  - start: {}\n  - traffic: {platform: telegram, turns: 1, actions: [remote-write]}\n", "need hub.nodes and platform telegram"},
		{"node step without nodes", head + "steps:\n  - start: {}\n  - node: {name: n1, action: start}\n", "a node step needs hub.nodes"},
		{"unknown node", "name: x\ndescription: d\nhub: {nodes: 2}\nsteps:\n  - start: {}\n  - node: {name: n3, action: kill}\n", `node.name "n3" is not one of the scenario's nodes (n1 to n2)`},
		{"unknown node action", "name: x\ndescription: d\nhub: {nodes: 1}\nsteps:\n  - start: {}\n  - node: {name: n1, action: pause}\n", `node.action "pause" is not accepted (accepted: start, stop, kill, restart)`},
		{"queued on a kill", "name: x\ndescription: d\nhub: {nodes: 1}\nsteps:\n  - start: {}\n  - node: {name: n1, action: kill, queued: ran}\n", "node.queued applies to start"},
		{"call timeout without nodes", head + "hub: {call_timeout: 3s}\nsteps:\n  - start: {}\n", "hub.call_timeout needs hub.nodes"},
		{"turns and duration", head + "steps:\n  - start: {}\n  - traffic: {platform: web, turns: 1, duration: 1s, actions: [whoami]}\n", "exactly one of turns, duration"},
		{"insert on interactions", head + "steps:\n  - start: {}\n  - traffic: {platform: discord, turns: 1, actions: [insert]}\n", "needs an ordered source"},
		{"429 without retry_after", head + "steps:\n  - start: {}\n  - fault: {platform: telegram, kind: \"429\"}\n", "needs retry_after"},
		{"unknown fault", head + "steps:\n  - start: {}\n  - fault: {platform: telegram, kind: flood}\n", `fault.kind "flood" is not accepted`},
		{"path on telegram", head + "steps:\n  - start: {}\n  - fault: {platform: telegram, kind: hang, path: /x}\n", "fault.path applies to discord"},
		{"bad duration", head + "steps:\n  - start: {}\n  - wait: {for: soon}\n", `"soon" is not a duration`},
		{"kill far from the minute", head + "hub: {schedule: true}\nsteps:\n  - start: {}\n  - kill: {near_minute: 45s}\n", "kill.near_minute 45s is not accepted (accepted: an offset from the next whole minute between -30s and 30s)"},
		{"mirror without tmpfs", head + "steps:\n  - start: {}\n  - mirror: {fill: true}\n", "needs hub.mirror_tmpfs"},
		{"corrupt outside the state", head + "steps:\n  - start: {}\n  - corrupt: {file: ../x, content: y}\n", "inside the state directory"},
		{"bad admin request", head + "steps:\n  - start: {}\n  - admin: {request: DELETE /, status: 200}\n", "is not \"GET /api/"},
		{"bad expectation", head + "expect: {mirror_gaps: sometimes}\nsteps:\n  - start: {}\n", `mirror_gaps "sometimes" is not accepted`},
		{"docker without hub.docker", head + "steps:\n  - start: {}\n  - docker: {stop: true}\n", "a docker step needs hub.docker"},
		{"docker stop and start", head + "hub: {docker: true}\nsteps:\n  - start: {}\n  - docker: {stop: true, start: true}\n", "exactly one of stop: true, start: true"},
		{"docker during on start", head + "hub: {docker: true}\nsteps:\n  - start: {}\n  - docker: {start: true, during: box}\n", `docker.during "box" is not accepted`},
		{"docker answer without during", head + "hub: {docker: true}\nsteps:\n  - start: {}\n  - docker: {stop: true, answer: [x]}\n", "docker.answer needs during: box"},
		{"box without hub.docker", head + "steps:\n  - start: {}\n  - traffic: {platform: telegram, turns: 1, actions: [box]}\n", "need hub.docker and platform telegram"},
		{"box on web", head + "hub: {docker: true}\nsteps:\n  - start: {}\n  - traffic: {platform: web, turns: 1, actions: [box-long]}\n", "need hub.docker and platform telegram"},
		{"nats step without a cluster", "name: x\ndescription: d\nhub: {nodes: 1}\nsteps:\n  - start: {}\n  - nats: {server: leader, action: kill}\n", "a nats step needs hub.cluster"},
		{"cluster without nodes", head + "hub: {cluster: 3}\nsteps:\n  - start: {}\n", "hub.cluster 3 is not accepted (accepted: 3, with hub.nodes)"},
		{"cluster of five", "name: x\ndescription: d\nhub: {nodes: 1, cluster: 5}\nsteps:\n  - start: {}\n", "hub.cluster 5 is not accepted"},
		{"unknown server", "name: x\ndescription: d\nhub: {nodes: 1, cluster: 3}\nsteps:\n  - start: {}\n  - nats: {server: s4, action: kill}\n", `nats.server "s4" is not accepted (accepted: leader, follower, all, s1, s2, s3)`},
		{"unknown nats action", "name: x\ndescription: d\nhub: {nodes: 1, cluster: 3}\nsteps:\n  - start: {}\n  - nats: {server: s1, action: pause}\n", `nats.action "pause" is not accepted`},
		{"start the leader", "name: x\ndescription: d\nhub: {nodes: 1, cluster: 3}\nsteps:\n  - start: {}\n  - nats: {server: leader, action: start}\n", "nats start names a server"},
		{"nats during on start", "name: x\ndescription: d\nhub: {nodes: 1, cluster: 3}\nsteps:\n  - start: {}\n  - nats: {server: all, action: start, during: remote}\n", `nats.during "remote" is not accepted`},
		{"nested repeat", head + "steps:\n  - start: {}\n  - repeat: {steps: [{repeat: {steps: [{wait: {for: 1s}}]}}]}\n", "cannot nest"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseScenario([]byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestLoadScenarioWantsItsFileName(t *testing.T) {
	path := filepath.Join(t.TempDir(), "other.yml")
	if err := os.WriteFile(path, []byte("name: x\ndescription: d\nsteps:\n  - start: {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadScenario(path); err == nil || !strings.Contains(err.Error(), `"other"`) {
		t.Fatalf("error %v, want one naming the file's base name", err)
	}
}

// FuzzParseScenario: no input makes the parser panic, and whatever it
// accepts validates again.
func FuzzParseScenario(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("scenarios", "*.yml"))
	for _, p := range files {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte("name: x\ndescription: d\nsteps:\n  - start: {}\n  - repeat: {times: 2, steps: [{kill: {random: {min: 1s, max: 2s}}}]}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		sc, err := ParseScenario(data)
		if err != nil {
			return
		}
		if err := sc.validate(); err != nil {
			t.Fatalf("accepted, then invalid: %v", err)
		}
	})
}
