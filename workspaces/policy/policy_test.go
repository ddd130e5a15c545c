package policy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a6afc2ce/hermes-hub/config"
)

func load(t *testing.T, yml string) *config.Config {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "hub.yml")
	if err := os.WriteFile(p, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.LoadWith(p, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

const policyYAML = `
workspaces:
  default:
    path: .
  alpha:
    path: ./a
  beta:
    path: ./b
  sandbox:
    path: ./s
    destination: {kind: docker, image: busybox}
  by_chat:
    "chat:telegram:-100": beta
    "chat:telegram:-100:7": sandbox
    web: alpha
  by_role:
    ops: beta
    dev: alpha
access:
  roles:
    ops: {verbs: ["*"], workspaces: ["*"]}
    dev: {verbs: ["fs.*"], workspaces: [alpha, "be*"]}
    plain: {verbs: ["fs.*"]}
`

func TestResolveOrder(t *testing.T) {
	p := New(load(t, policyYAML))
	tests := []struct {
		name      string
		q         Query
		want, why string
		wantErr   string
	}{
		{"explicit wins over everything", Query{Explicit: "sandbox", Chosen: "alpha", ChatKey: "web", Roles: []string{"ops"}}, "sandbox", ReasonExplicit, ""},
		{"explicit unknown", Query{Explicit: "nope"}, "", "", `workspace "nope" is not configured (accepted: default, alpha, beta, sandbox)`},
		{"/use over by_chat", Query{Chosen: "beta", ChatKey: "web"}, "beta", ReasonUse, ""},
		{"stale /use passed over", Query{Chosen: "gone", ChatKey: "web"}, "alpha", `workspaces.by_chat["web"] (the /use choice "gone" is no longer configured)`, ""},
		{"by_chat exact thread", Query{ChatKey: "chat:telegram:-100:7", Roles: []string{"ops"}}, "sandbox", `workspaces.by_chat["chat:telegram:-100:7"]`, ""},
		{"thread falls back to its chat", Query{ChatKey: "chat:telegram:-100:8", Roles: []string{"dev"}}, "beta", `workspaces.by_chat["chat:telegram:-100"]`, ""},
		{"by_chat over by_role", Query{ChatKey: "web", Roles: []string{"ops"}}, "alpha", `workspaces.by_chat["web"]`, ""},
		{"by_role", Query{ChatKey: "chat:discord:1", Roles: []string{"ops"}}, "beta", `workspaces.by_role["ops"]`, ""},
		{"by_role tie: first workspace by name", Query{ChatKey: "chat:discord:1", Roles: []string{"ops", "dev"}}, "alpha", `workspaces.by_role["dev"]`, ""},
		{"by_role tie in any role order", Query{ChatKey: "chat:discord:1", Roles: []string{"dev", "ops"}}, "alpha", `workspaces.by_role["dev"]`, ""},
		{"default", Query{ChatKey: "chat:discord:1", Roles: []string{"plain"}}, "default", ReasonDefault, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := p.Resolve(tt.q)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.Name != tt.want || r.Reason != tt.why {
				t.Fatalf("got %s (%s), want %s (%s)", r.Name, r.Reason, tt.want, tt.why)
			}
			if r.Destination == "" {
				t.Fatal("no destination")
			}
		})
	}
}

func TestImplicitDefaultIsLocal(t *testing.T) {
	p := New(config.Default())
	r, err := p.Resolve(Query{ChatKey: "web", Roles: []string{"reader"}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Name != Default || !strings.HasPrefix(r.Reason, "default (not configured") || !strings.HasPrefix(r.Destination, "local (host processes in ") {
		t.Fatalf("%+v", r)
	}
}

func TestAccess(t *testing.T) {
	p := New(load(t, policyYAML))
	tests := []struct {
		roles []string
		name  string
		ok    bool
	}{
		{[]string{"plain"}, "default", true},
		{[]string{"plain"}, "alpha", false},
		{[]string{"reader"}, "default", true},
		{[]string{"reader"}, "sandbox", false},
		{[]string{"dev"}, "alpha", true},
		{[]string{"dev"}, "beta", true},
		{[]string{"dev"}, "default", false},
		{[]string{"dev"}, "sandbox", false},
		{[]string{"ops"}, "sandbox", true},
		{[]string{"plain", "dev"}, "default", true},
		{nil, "default", false},
	}
	for _, tt := range tests {
		if got := p.MayUse(tt.roles, tt.name); got != tt.ok {
			t.Errorf("MayUse(%v, %s) = %v, want %v", tt.roles, tt.name, got, tt.ok)
		}
	}
	if got := strings.Join(p.RolesFor("sandbox"), ","); got != "ops" {
		t.Errorf("RolesFor(sandbox) = %s", got)
	}
	if got := strings.Join(p.Usable([]string{"dev"}), ","); got != "alpha,beta" {
		t.Errorf("Usable(dev) = %s", got)
	}
	// Refused, never swapped: the error names the workspace, why, and who may.
	_, err := p.Check(Query{Explicit: "sandbox", Roles: []string{"dev"}})
	want := `workspace "sandbox" (chosen for this call) is not open to your roles (dev); roles that may use it: ops`
	if err == nil || err.Error() != want {
		t.Fatalf("err %v, want %q", err, want)
	}
	if _, err := p.Check(Query{ChatKey: "web", Roles: []string{"plain"}}); err == nil || !strings.Contains(err.Error(), `workspace "alpha" (workspaces.by_chat["web"])`) {
		t.Fatalf("by_chat into a workspace the role may not use: %v", err)
	}
}

func TestDescribe(t *testing.T) {
	p := New(load(t, policyYAML))
	d := p.Destination("sandbox")
	if !strings.HasPrefix(d, "docker (image busybox, network none)") || !strings.HasSuffix(d, "/s at /workspace") {
		t.Fatalf("docker description %q", d)
	}
}

// TestResolutionRuleAndRuns: a resolution names its rule and the kind of
// its destination in one word each, for a view to word them for people.
func TestResolutionRuleAndRuns(t *testing.T) {
	p := New(load(t, policyYAML))
	for _, c := range []struct {
		q          Query
		rule, runs string
	}{
		{Query{Explicit: "sandbox"}, RuleCall, config.DestinationDocker},
		{Query{Chosen: "alpha"}, RuleUse, config.DestinationLocal},
		{Query{ChatKey: "web"}, RuleChat, config.DestinationLocal},
		{Query{ChatKey: "chat:discord:1", Roles: []string{"ops"}}, RuleRole, config.DestinationLocal},
		{Query{ChatKey: "chat:discord:1", Roles: []string{"plain"}}, RuleDefault, config.DestinationLocal},
	} {
		r, err := p.Resolve(c.q)
		if err != nil || r.Rule != c.rule || r.Runs != c.runs {
			t.Errorf("%+v: %+v %v; want rule %s, runs %s", c.q, r, err, c.rule, c.runs)
		}
	}
	r, err := New(config.Default()).Resolve(Query{ChatKey: "web"})
	if err != nil || r.Rule != RuleDefault || r.Runs != config.DestinationLocal {
		t.Errorf("no configuration: %+v %v", r, err)
	}
}
