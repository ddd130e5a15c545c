package hub

import (
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/workspaces/policy"
)

// Reloadable is one part of the configuration a running hub applies
// without a restart. Keys are the configuration keys it covers ("access",
// "sessions.mode", "telegram.rate"): a key and everything under it. Apply
// installs the part of a new, valid configuration; it takes effect on the
// next turn, never on one in flight.
type Reloadable struct {
	Name  string
	Keys  []string
	Apply func(cfg *config.Config)
}

// ReloadReport says what a reload did.
type ReloadReport struct {
	// File is the configuration file read.
	File string `json:"file"`
	// Applied names the parts applied, Changed the keys they changed.
	Applied []string `json:"applied"`
	Changed []string `json:"changed"`
	// Restart lists the keys that differ from the running configuration
	// and apply only when `hub serve` starts again.
	Restart []string `json:"restart"`
	// Widened says what the reload lets someone do that they could not
	// before (AccessWidening); each line is also logged as a warning.
	Widened []string `json:"widened"`
}

// String is the report for people (the log, `hub reload`).
func (r ReloadReport) String() string {
	var b strings.Builder
	if len(r.Changed) == 0 {
		b.WriteString("no reloadable setting changed")
	} else {
		fmt.Fprintf(&b, "applied: %s (changed: %s)", strings.Join(r.Applied, ", "), strings.Join(r.Changed, ", "))
	}
	if len(r.Restart) > 0 {
		fmt.Fprintf(&b, "\nneeds a restart: %s", strings.Join(r.Restart, ", "))
	}
	if len(r.Widened) > 0 {
		fmt.Fprintf(&b, "\nWARNING: this reload widens access: %s", strings.Join(r.Widened, "; "))
	}
	return b.String()
}

// ErrNoReload is returned by Runtime.Reload when the runtime cannot reload
// (the CLI's own runtime while no hub runs).
var ErrNoReload = errors.New("no running hub to reload: the configuration is read when `hub serve` starts")

// Reloader re-reads the configuration and applies its reloadable parts:
// one list of parts, each with its apply func, so that more parts register
// as they become reloadable. Everything else that changed is reported as
// needing a restart. An invalid file changes nothing.
type Reloader struct {
	load func() (*config.Config, error)
	log  *slog.Logger

	mu      sync.Mutex
	started *config.Config // what the process runs with: restart-only keys compare to it
	current *config.Config // the last configuration applied
	parts   []Reloadable
	steps   []refreshStep
}

// refreshStep is a step run on every reload (Reloader.Refresh).
type refreshStep struct {
	name string
	f    func(cfg *config.Config) error
}

// NewReloader returns a Reloader for a hub started with cfg; load reads the
// configuration again (the file, the environment, the command line's
// overrides).
func NewReloader(cfg *config.Config, load func() (*config.Config, error), log *slog.Logger) *Reloader {
	if log == nil {
		log = slog.Default()
	}
	return &Reloader{load: load, log: log, started: cfg, current: cfg}
}

// Register adds a reloadable part.
func (r *Reloader) Register(p Reloadable) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.parts = append(r.parts, p)
}

// Refresh adds a step run on every reload whose configuration is valid,
// whatever changed, before the parts apply: for what the configuration
// names on disk, which can change without a key changing (the protected
// files, which an editor replaces by renaming a new file over them). A
// step's error refuses the reload; steps must leave things whole when they
// fail.
func (r *Reloader) Refresh(name string, f func(cfg *config.Config) error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.steps = append(r.steps, refreshStep{name: name, f: f})
}

// Reload reads the configuration and applies the parts that changed. On an
// error (a file that does not parse or validate, with its line) the
// running configuration stays whole. A reload that widens access applies,
// and says what it widened (ReloadReport.Widened) in its report and as a
// warning in the log.
func (r *Reloader) Reload() (ReloadReport, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	cfg, err := r.load()
	if err == nil {
		for _, f := range r.steps {
			if ferr := f.f(cfg); ferr != nil {
				err = fmt.Errorf("%s: %w", f.name, ferr)
				break
			}
		}
	}
	if err != nil {
		r.log.Error("reload refused: the running configuration is kept", "err", err)
		return ReloadReport{}, fmt.Errorf("reload refused, the running configuration is kept: %w", err)
	}
	rep := ReloadReport{File: cfg.Path, Applied: []string{}, Changed: []string{}, Restart: []string{}, Widened: append(AccessWidening(r.current.Access, cfg.Access), CommandsWidening(r.current.Commands, cfg.Commands)...)}
	covered := func(k string) bool {
		for _, p := range r.parts {
			if coversKey(p.Keys, k) {
				return true
			}
		}
		return false
	}
	for _, k := range ConfigDiff(r.started, cfg) {
		if !covered(k) {
			rep.Restart = append(rep.Restart, k)
		}
	}
	changed := ConfigDiff(r.current, cfg)
	for _, p := range r.parts {
		var mine []string
		for _, k := range changed {
			if coversKey(p.Keys, k) {
				mine = append(mine, k)
			}
		}
		if len(mine) == 0 {
			continue
		}
		p.Apply(cfg)
		rep.Applied = append(rep.Applied, p.Name)
		rep.Changed = append(rep.Changed, mine...)
	}
	r.current = cfg
	r.log.Info("configuration reloaded", "file", cfg.Path, "applied", strings.Join(rep.Applied, ","), "changed", strings.Join(rep.Changed, ","))
	if len(rep.Restart) > 0 {
		r.log.Warn("configuration changes that need a restart: "+strings.Join(rep.Restart, ", "), "file", cfg.Path)
	}
	for _, w := range rep.Widened {
		r.log.Warn("reload widens access: "+w, "file", cfg.Path)
	}
	return rep, nil
}

func coversKey(keys []string, k string) bool {
	for _, p := range keys {
		if k == p || strings.HasPrefix(k, p+".") {
			return true
		}
	}
	return false
}

// ConfigDiff lists the configuration keys (as written in the file:
// "web.listen", "access.grants") whose values differ between a and b,
// sorted. Maps and lists count as one key; secrets are compared, never
// shown.
func ConfigDiff(a, b *config.Config) []string {
	var out []string
	diffValue(reflect.ValueOf(*a), reflect.ValueOf(*b), "", &out)
	sort.Strings(out)
	return out
}

func diffValue(a, b reflect.Value, key string, out *[]string) {
	if a.Type() == reflect.TypeFor[config.Workspaces]() {
		diffWorkspaces(a.Interface().(config.Workspaces), b.Interface().(config.Workspaces), key, out)
		return
	}
	for a.Kind() == reflect.Pointer {
		if a.IsNil() || b.IsNil() {
			if a.IsNil() != b.IsNil() {
				*out = append(*out, key)
			}
			return
		}
		a, b = a.Elem(), b.Elem()
	}
	if a.Kind() == reflect.Struct {
		t := a.Type()
		tagged := false
		for i := 0; i < t.NumField(); i++ {
			name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
			if name == "" || name == "-" {
				continue
			}
			tagged = true
			k := name
			if key != "" {
				k = key + "." + name
			}
			diffValue(a.Field(i), b.Field(i), k, out)
		}
		if tagged {
			return
		}
	}
	if !reflect.DeepEqual(a.Interface(), b.Interface()) {
		*out = append(*out, key)
	}
}

// diffWorkspaces lists the keys of the workspaces section that differ:
// key.by_chat, key.by_role and key.NAME for each named workspace added,
// removed or changed (its path or destination).
func diffWorkspaces(a, b config.Workspaces, key string, out *[]string) {
	if !reflect.DeepEqual(normMap(a.ByChat), normMap(b.ByChat)) {
		*out = append(*out, key+"."+config.WorkspacesByChat)
	}
	if !reflect.DeepEqual(normMap(a.ByRole), normMap(b.ByRole)) {
		*out = append(*out, key+"."+config.WorkspacesByRole)
	}
	names := map[string]bool{}
	for n := range a.Named {
		names[n] = true
	}
	for n := range b.Named {
		names[n] = true
	}
	for n := range names {
		wa, okA := a.Named[n]
		wb, okB := b.Named[n]
		if okA != okB || !reflect.DeepEqual(wa, wb) {
			*out = append(*out, key+"."+n)
		}
	}
}

// normMap treats an empty map as no map.
func normMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return m
}

// SessionSwitch is the session policy of a running hub (SessionPolicy),
// replaced on reload: pass For as the runtime's SessionFor.
type SessionSwitch struct {
	p atomic.Pointer[func(in *chat.Inbound, roles []string) string]
}

// NewSessionSwitch starts with the policy of cfg.
func NewSessionSwitch(cfg config.Sessions) *SessionSwitch {
	s := &SessionSwitch{}
	s.Set(cfg)
	return s
}

// Set installs the policy of cfg.
func (s *SessionSwitch) Set(cfg config.Sessions) {
	f := SessionPolicy(cfg)
	s.p.Store(&f)
}

// For picks the session of a turn by the policy in force.
func (s *SessionSwitch) For(in *chat.Inbound, roles []string) string { return (*s.p.Load())(in, roles) }

// Reloadable parts of every runtime and of the session rules.
var (
	// AccessKeys: roles, grants and default roles.
	AccessKeys = []string{"access"}
	// SessionKeys: the rules that pick a turn's workspace mode.
	SessionKeys = []string{"sessions.mode", "sessions.by_chat", "sessions.by_role"}
	// WorkspaceKeys: the rules that pick a turn's named workspace. Who may
	// use a workspace (access.roles.<role>.workspaces) is reloaded with
	// access. Adding or removing a workspace, or changing its path or
	// destination, needs a restart.
	WorkspaceKeys = []string{"workspaces." + config.WorkspacesByChat, "workspaces." + config.WorkspacesByRole}
	// ScheduleKeys: every schedule, added, changed or removed.
	ScheduleKeys = []string{"schedules"}
	// CommandKeys: every named command, added, changed or removed (the
	// registry's cmd.* verbs replaced at once).
	CommandKeys = []string{"commands"}
)

// workspacePolicy is the workspace policy of a reloaded configuration: its
// access and its by_chat and by_role rules over the workspaces the hub
// started with (opened once: a new one needs a restart).
func workspacePolicy(started, cfg *config.Config) *policy.Policy {
	merged := *started
	merged.Access = cfg.Access
	merged.Workspaces.ByChat = cfg.Workspaces.ByChat
	merged.Workspaces.ByRole = cfg.Workspaces.ByRole
	return policy.New(&merged)
}

// SessionsReloadable applies the session rules to s.
func SessionsReloadable(s *SessionSwitch) Reloadable {
	return Reloadable{Name: "sessions", Keys: SessionKeys, Apply: func(cfg *config.Config) { s.Set(cfg.Sessions) }}
}

// EnableReload makes the runtime reloadable with load (see Reloader) and
// registers the runtime's own parts (the access policy, the workspace
// rules, mirror retention, the named commands and the schedules, which a reload refuses when this
// hub cannot run them); the composition registers more parts on the
// Reloader returned.
func (rt *Runtime) EnableReload(load func() (*config.Config, error)) *Reloader {
	r := NewReloader(rt.Config, load, rt.log)
	acc := rt.Hub.Access()
	started := rt.Config
	r.Register(Reloadable{Name: "access", Keys: AccessKeys, Apply: func(cfg *config.Config) {
		acc.Replace(cfg.Access)
		if rt.Hub.WorkspacePolicy() != nil {
			rt.Hub.SetWorkspacePolicy(workspacePolicy(started, cfg))
		}
	}})
	r.Register(Reloadable{Name: "workspaces", Keys: WorkspaceKeys, Apply: func(cfg *config.Config) {
		if rt.Hub.WorkspacePolicy() != nil {
			rt.Hub.SetWorkspacePolicy(workspacePolicy(started, cfg))
		}
	}})
	r.Register(rt.RetentionReloadable())
	r.Refresh("check the commands", rt.Hub.commands.Check)
	r.Register(Reloadable{Name: "commands", Keys: CommandKeys, Apply: func(cfg *config.Config) {
		if err := rt.Hub.commands.Replace(cfg.Commands); err != nil {
			rt.log.Error("reload the commands", "err", err)
		}
	}})
	r.Refresh("check the schedules", rt.Schedules.Check)
	r.Register(Reloadable{Name: "schedules", Keys: ScheduleKeys, Apply: func(cfg *config.Config) {
		if err := rt.Schedules.Replace(cfg); err != nil {
			rt.log.Error("reload the schedules", "err", err)
		}
	}})
	rt.reloader.Store(r)
	return r
}

// Reload re-reads the configuration (SIGHUP, `hub reload`); ErrNoReload
// when EnableReload was not called.
func (rt *Runtime) Reload() (ReloadReport, error) {
	r := rt.reloader.Load()
	if r == nil {
		return ReloadReport{}, ErrNoReload
	}
	return r.Reload()
}
