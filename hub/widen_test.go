package hub_test

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/hub"
)

// TestAccessWidening names each way a new access section lets someone do
// more, and nothing when it narrows.
func TestAccessWidening(t *testing.T) {
	a := config.Access{
		Roles: map[string]config.Role{
			"editor": {Verbs: []string{"fs.*"}},
			"ops":    {Verbs: []string{"sys.*"}, Workspaces: []string{"logs"}},
			"reader": {Verbs: []string{"fs.readFile"}},
		},
		Grants:       map[string][]string{"telegram:1": {"editor"}},
		DefaultRoles: nil,
	}
	b := config.Access{
		Roles: map[string]config.Role{
			"editor": {Verbs: []string{"fs.*", "proc.run", "admin.access"}, Workspaces: []string{"default", "prod"}},
			"ops":    {Verbs: []string{"sys.*"}, Workspaces: []string{"logs"}},
			"admin":  {Verbs: []string{"*"}},
		},
		Grants:       map[string][]string{"telegram:1": {"editor", "ops"}, "web": {"admin"}},
		DefaultRoles: []string{"admin"},
	}
	want := []string{
		"access.default_roles gained admin: every identity now holds it, strangers included",
		`access.grants["telegram:1"] gained ops`,
		`access.grants["web"] gained admin`,
		"access.roles.admin gained verb pattern *",
		"access.roles.admin gained workspace default",
		"access.roles.editor gained verb pattern proc.run",
		"access.roles.editor gained admin permission admin.access",
		"access.roles.editor gained workspace prod",
		"access.roles.reader is no longer configured: the built-in reader role (every read-only verb) applies again",
	}
	if got := hub.AccessWidening(a, b); !slices.Equal(got, want) {
		t.Fatalf("widening:\n got %q\nwant %q", got, want)
	}
	if got := hub.AccessWidening(b, a); len(got) != 1 || !strings.Contains(got[0], "access.roles.reader gained verb pattern fs.readFile") {
		t.Fatalf("narrowing (the reader role configured again counts as its patterns): %q", got)
	}
	if got := hub.AccessWidening(a, a); len(got) != 0 {
		t.Fatalf("no change: %q", got)
	}
}

// TestChatAccessWidening: a chat grant gained, and a ceiling raised or
// removed, widen access; a ceiling added narrows it.
func TestChatAccessWidening(t *testing.T) {
	a := config.Access{Chats: map[string]config.ChatRule{
		"telegram:chat:-1": {MaxRoles: []string{"reader"}},
		"telegram:chat:-2": {MaxRoles: []string{"reader"}},
		"telegram:chat:-3": {Grants: map[string][]string{"telegram:1": {"ops"}}},
	}}
	b := config.Access{Chats: map[string]config.ChatRule{
		"telegram:chat:-1": {MaxRoles: []string{"reader", "ops"}},
		"telegram:chat:-3": {Grants: map[string][]string{"telegram:1": {"ops", "admin"}}, MaxRoles: []string{"reader"}},
	}}
	want := []string{
		`access.chats["telegram:chat:-1"].max_roles was raised or removed`,
		`access.chats["telegram:chat:-3"].grants["telegram:1"] gained admin`,
		`access.chats["telegram:chat:-2"] and its max_roles were removed`,
	}
	if got := hub.AccessWidening(a, b); !slices.Equal(got, want) {
		t.Fatalf("widening:\n got %q\nwant %q", got, want)
	}
}

// TestCommandsWidening: a named command added or changed widens what its
// holders may run; one removed or left alone does not.
func TestCommandsWidening(t *testing.T) {
	count := config.Command{Run: config.CommandRun{Verb: "fs.lineCount", Arguments: config.Arguments{"path": "a"}}}
	other := count
	other.Run.Arguments = config.Arguments{"path": "b"}
	a := config.Commands{"count": count, "gone": count, "same": count}
	b := config.Commands{"count": other, "new": count, "same": count}
	want := []string{"commands.count changed what it runs (fs.lineCount)", "commands.new was added: it runs fs.lineCount"}
	if got := hub.CommandsWidening(a, b); !slices.Equal(got, want) {
		t.Fatalf("widening:\n got %q\nwant %q", got, want)
	}
	if got := hub.CommandsWidening(b, a); !slices.Equal(got, []string{"commands.count changed what it runs (fs.lineCount)", "commands.gone was added: it runs fs.lineCount"}) {
		t.Fatalf("the other way: %q", got)
	}
}

// TestReloadWarnsWhenAccessWidens: a reload that grants everyone admin
// applies, and its report and the log say so.
func TestReloadWarnsWhenAccessWidens(t *testing.T) {
	ws := t.TempDir()
	file := filepath.Join(ws, "hub.yml")
	base := "access:\n  roles:\n    admin: {verbs: ['*']}\n  grants:\n    \"telegram:1\": [reader]\n"
	if err := os.WriteFile(file, []byte(base), 0o600); err != nil {
		t.Fatal(err)
	}
	load := func() (*config.Config, error) {
		cfg, err := config.Load(file)
		if err != nil {
			return nil, err
		}
		cfg.Workspace, cfg.StateDir = ws, filepath.Join(ws, ".hub")
		return cfg, nil
	}
	cfg, err := load()
	if err != nil {
		t.Fatal(err)
	}
	var logs lockedBuffer
	r := hub.NewReloader(cfg, load, slog.New(slog.NewTextHandler(&logs, nil)))
	r.Register(hub.Reloadable{Name: "access", Keys: hub.AccessKeys, Apply: func(*config.Config) {}})
	if err := os.WriteFile(file, []byte(base+"  default_roles: [admin]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rep, err := r.Reload()
	if err != nil {
		t.Fatal(err)
	}
	const line = "access.default_roles gained admin: every identity now holds it, strangers included"
	if !slices.Equal(rep.Widened, []string{line}) || !slices.Equal(rep.Applied, []string{"access"}) {
		t.Fatalf("report %+v", rep)
	}
	if s := rep.String(); !strings.Contains(s, "WARNING: this reload widens access: "+line) {
		t.Fatalf("report text %q", s)
	}
	if l := logs.String(); !strings.Contains(l, "level=WARN") || !strings.Contains(l, "reload widens access: "+line) {
		t.Fatalf("log %q", l)
	}
	// Narrowing again says nothing of the kind.
	if err := os.WriteFile(file, []byte(base), 0o600); err != nil {
		t.Fatal(err)
	}
	if rep, err = r.Reload(); err != nil || len(rep.Widened) != 0 || strings.Contains(rep.String(), "WARNING") {
		t.Fatalf("narrowing: %+v %v", rep, err)
	}
}

// TestReloadRefreshStepRefuses: a refresh step runs on every reload, even
// one that changes no key, and its error refuses the reload.
func TestReloadRefreshStepRefuses(t *testing.T) {
	cfg := config.Default()
	r := hub.NewReloader(cfg, func() (*config.Config, error) { return config.Default(), nil }, slog.New(slog.DiscardHandler))
	runs := 0
	var fail error
	r.Refresh("count", func(*config.Config) error { runs++; return fail })
	if _, err := r.Reload(); err != nil || runs != 1 {
		t.Fatalf("reload: %v, %d runs", err, runs)
	}
	fail = os.ErrPermission
	if _, err := r.Reload(); err == nil || !strings.Contains(err.Error(), "running configuration is kept") || !strings.Contains(err.Error(), "count") || runs != 2 {
		t.Fatalf("a failing step: %v, %d runs", err, runs)
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
