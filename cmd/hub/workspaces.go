package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/a6afc2ce/hermes-hub/admin"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/store"
	"github.com/a6afc2ce/hermes-hub/workspaces"
	"github.com/a6afc2ce/hermes-hub/workspaces/policy"
)

const workspacesUsage = `hub workspaces list [--json]
hub workspaces show [NAME] [--chat KEY] [--json]
hub workspaces reset NAME [--session ID]

list: every workspace, its path, destination and the roles that may use it
      (and, while the hub runs, a docker workspace's containers).
show: the effective workspace of a chat key (default: web) and why, or the
      workspace NAME; the chat's /use choice is read from the state.
reset: remove the sandboxes (containers) of NAME, or of one session; a
      local workspace has none and is refused.
While the hub runs these go through its admin socket (what it runs with,
reloads included); otherwise they read the configuration.
See docs/workspaces.md.`

// workspaceInfo is one row of hub workspaces list.
type workspaceInfo struct {
	Name        string   `json:"name"`
	Path        string   `json:"path"`
	Kind        string   `json:"kind"`
	Destination string   `json:"destination"`
	Roles       []string `json:"roles"`
}

func runWorkspaces(env *cliEnv, args []string) error {
	if len(args) == 0 {
		return usagef("give list, show or reset (see hub workspaces --help)")
	}
	sub, args := args[0], args[1:]
	f := newFlags(env, "workspaces "+sub, workspacesUsage)
	var c commonFlags
	c.register(f, false)
	asJSON := f.Bool("json", false, "print JSON")
	chatKey := f.String("chat", "", "the chat key to resolve for (show), such as chat:telegram:-100123 (default web)")
	session := f.String("session", "", "the session whose sandbox to remove (reset)")
	switch sub {
	case "list", "show", "reset":
	case "-h", "-help", "--help", "help":
		// The help needs no configuration: a broken one must not hide it.
		_, err := f.parse([]string{"--help"})
		return err
	default:
		return usagef("unknown subcommand %q (accepted: list, show, reset)", sub)
	}
	pos, err := f.parse(args)
	if err != nil {
		return err
	}
	cfg, err := loadConfig(c)
	if err != nil {
		return err
	}
	if c, ok := dialSocket(filepath.Join(cfg.StateDir, store.SocketFile)); ok {
		defer c.Close()
		return workspacesOnline(env.stdout, c, sub, pos, *chatKey, *session, *asJSON, func(name string) *nodeLiveness { return remoteNode(cfg, name) })
	}
	p := policy.New(cfg)
	switch sub {
	case "list":
		if len(pos) > 0 {
			return usagef("unexpected argument %q", pos[0])
		}
		return printWorkspaceList(env.stdout, p, *asJSON)
	case "show":
		if len(pos) > 1 {
			return usagef("one NAME at most")
		}
		name := ""
		if len(pos) == 1 {
			name = pos[0]
		}
		return showWorkspace(env.stdout, cfg, p, name, *chatKey, *asJSON)
	case "reset":
		if len(pos) != 1 {
			return usagef("give the workspace to reset: hub workspaces reset NAME")
		}
		return resetWorkspace(env.stdout, cfg, pos[0], *session)
	}
	return usagef("unknown subcommand %q (accepted: list, show, reset)", sub)
}

func workspaceRows(p *policy.Policy) []workspaceInfo {
	var out []workspaceInfo
	for _, n := range p.Names() {
		wc, _ := p.Workspace(n)
		abs := "" // a remote workspace has no path here
		if !wc.IsRemote() {
			abs, _ = filepath.Abs(wc.Path)
		}
		out = append(out, workspaceInfo{Name: n, Path: abs, Kind: wc.Destination.Kind, Destination: p.Destination(n), Roles: p.RolesFor(n)})
	}
	return out
}

func printWorkspaceList(w io.Writer, p *policy.Policy, asJSON bool) error {
	rows := workspaceRows(p)
	if asJSON {
		return writeJSON(w, rows)
	}
	for _, r := range rows {
		roles := strings.Join(r.Roles, ", ")
		if roles == "" {
			roles = "no role"
		}
		fmt.Fprintf(w, "%-12s %s\n%12s destination: %s\n%12s used by: %s\n", r.Name, r.Path, "", r.Destination, "", roles)
	}
	return nil
}

// workspaceShown is `hub workspaces show --json` of one workspace: with
// the liveness of its node when it is remote.
type workspaceShown[T any] struct {
	View T
	Node *nodeLiveness
}

func (s workspaceShown[T]) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(s.View)
	if err != nil || s.Node == nil {
		return b, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	if m["node"], err = json.Marshal(s.Node); err != nil {
		return nil, err
	}
	return json.Marshal(m)
}

// workspacesOnline runs hub workspaces through a running hub's admin API;
// node reads a remote workspace's node liveness (nil for others).
func workspacesOnline(w io.Writer, c *adminClient, sub string, pos []string, key, session string, asJSON bool, node func(string) *nodeLiveness) error {
	switch sub {
	case "list":
		if len(pos) > 0 {
			return usagef("unexpected argument %q", pos[0])
		}
		var v admin.WorkspacesView
		if err := c.do("GET", "/api/workspaces", nil, nil, &v); err != nil {
			return err
		}
		if asJSON {
			return writeJSON(w, v.Workspaces)
		}
		for _, ws := range v.Workspaces {
			printWorkspaceView(w, ws)
		}
		return nil
	case "show":
		if len(pos) > 1 {
			return usagef("one NAME at most")
		}
		if len(pos) == 1 {
			var v admin.WorkspacesView
			if err := c.do("GET", "/api/workspaces", nil, nil, &v); err != nil {
				return err
			}
			for _, ws := range v.Workspaces {
				if ws.Name != pos[0] {
					continue
				}
				live := node(ws.Name)
				if asJSON {
					return writeJSON(w, workspaceShown[admin.WorkspaceView]{ws, live})
				}
				printWorkspaceView(w, ws)
				if live != nil {
					fmt.Fprintf(w, "%12s node: %s\n", "", live)
				}
				return nil
			}
			names := make([]string, 0, len(v.Workspaces))
			for _, ws := range v.Workspaces {
				names = append(names, ws.Name)
			}
			return fmt.Errorf("workspace %q is not configured (accepted: %s)", pos[0], strings.Join(names, ", "))
		}
		if key == "" {
			key = "web"
		}
		var v admin.EffectiveView
		if err := c.do("GET", "/api/workspaces/effective", url.Values{"chat": {key}}, nil, &v); err != nil {
			return err
		}
		live := node(v.Name)
		if asJSON {
			return writeJSON(w, workspaceShown[policy.Resolution]{v.Resolution, live})
		}
		fmt.Fprintf(w, "workspace:   %s\ndestination: %s\nwhy:         %s\n", v.Name, v.Destination, v.Reason)
		if live != nil {
			fmt.Fprintf(w, "node:        %s\n", live)
		}
		fmt.Fprintf(w, "chat:        %s (by_role is not applied: it depends on who speaks)\n", v.Chat)
		return nil
	default: // reset
		if len(pos) != 1 {
			return usagef("give the workspace to reset: hub workspaces reset NAME")
		}
		q := url.Values{}
		if session != "" {
			q.Set("session", session)
		}
		var v admin.ResetView
		if err := c.do("POST", "/api/workspaces/"+url.PathEscape(pos[0])+"/reset", q, struct{}{}, &v); err != nil {
			return err
		}
		fmt.Fprintf(w, "workspace %s: removed %s\n", v.Workspace, v.Removed)
		return nil
	}
}

// printWorkspaceView prints one workspace of the running hub.
func printWorkspaceView(w io.Writer, ws admin.WorkspaceView) {
	roles := strings.Join(ws.Roles, ", ")
	if roles == "" {
		roles = "no role"
	}
	fmt.Fprintf(w, "%-12s %s\n%12s destination: %s\n%12s used by: %s\n", ws.Name, ws.Path, "", ws.Destination, "", roles)
	if ws.ContainersError != "" {
		fmt.Fprintf(w, "%12s containers: %s\n", "", ws.ContainersError)
	} else if ws.Kind == config.DestinationDocker && len(ws.Containers) == 0 {
		fmt.Fprintf(w, "%12s containers: none\n", "")
	}
	for _, ct := range ws.Containers {
		sess := ct.Session
		if sess == "" {
			sess = "(workspace)"
		}
		used := "not since the hub started"
		if !ct.LastUsed.IsZero() {
			used = ct.LastUsed.Format(time.RFC3339)
		}
		fmt.Fprintf(w, "%12s container %s %s session %s created %s last used %s\n", "", short12(ct.ID), ct.State, sess, ct.Created.Format(time.RFC3339), used)
	}
}

func short12(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// showWorkspace prints the workspace NAME, or the one a chat key resolves
// to (its /use choice read from the state when it can be opened).
func showWorkspace(w io.Writer, cfg *config.Config, p *policy.Policy, name, key string, asJSON bool) error {
	var r policy.Resolution
	if name != "" {
		if !p.Known(name) {
			return p.UnknownError(name)
		}
		r = policy.Resolution{Name: name, Destination: p.Destination(name), Reason: "named on the command line"}
	} else {
		if key == "" {
			key = "web"
		}
		chosen, note := readChoice(cfg, key)
		var err error
		if r, err = p.Resolve(policy.Query{Chosen: chosen, ChatKey: key}); err != nil {
			return err
		}
		if note != "" {
			r.Reason += " (" + note + ")"
		}
	}
	live := remoteNode(cfg, r.Name)
	if asJSON {
		return writeJSON(w, workspaceShown[policy.Resolution]{r, live})
	}
	fmt.Fprintf(w, "workspace:   %s\ndestination: %s\nwhy:         %s\n", r.Name, r.Destination, r.Reason)
	if live != nil {
		fmt.Fprintf(w, "node:        %s\n", live)
	}
	if key != "" {
		fmt.Fprintf(w, "chat:        %s (by_role is not applied: it depends on who speaks)\n", key)
	}
	return nil
}

// readChoice reads a chat's /use choice from the state without waiting
// for a running hub's lock; note says why it could not.
func readChoice(cfg *config.Config, key string) (string, string) {
	if _, err := os.Stat(filepath.Join(cfg.StateDir, "hub.db")); err != nil {
		return "", ""
	}
	st, err := store.Open(cfg.StateDir, store.Options{LockTimeout: 200 * time.Millisecond})
	if err != nil {
		return "", "the chat's /use choice could not be read: " + err.Error()
	}
	defer st.Close()
	c, err := st.Choices().Workspace(key)
	if err != nil {
		return "", err.Error()
	}
	return c, ""
}

// resetWorkspace removes the sandboxes of a workspace through its runner.
func resetWorkspace(w io.Writer, cfg *config.Config, name, session string) error {
	wc, ok := cfg.WorkspaceByName(name)
	if !ok {
		return policy.New(cfg).UnknownError(name)
	}
	if wc.Destination.Kind == config.DestinationLocal {
		return fmt.Errorf("workspace %s %w (its programs are host processes that end with their call)", name, workspaces.ErrLocal)
	}
	run, err := runnerFactory(cfg, nil)(name, wc.Destination)
	if err != nil {
		return fmt.Errorf("workspace %s: %w", name, err)
	}
	if c, ok := run.(io.Closer); ok {
		defer c.Close()
	}
	r, ok := run.(workspaces.Resetter)
	if !ok {
		return fmt.Errorf("workspace %s: its destination cannot be reset", name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := r.Reset(ctx, session); err != nil {
		return fmt.Errorf("workspace %s: reset: %w", name, err)
	}
	what := "every sandbox"
	if session != "" {
		what = "the sandbox of session " + session
	}
	fmt.Fprintf(w, "workspace %s: removed %s\n", name, what)
	return nil
}

// doctorDestinations checks every workspace's destination, one line each.
func doctorDestinations(r *doctorReport, cfg *config.Config) {
	p := policy.New(cfg)
	for _, n := range p.Names() {
		wc, _ := p.Workspace(n)
		what := "ws " + n
		if wc.Destination.Kind == config.DestinationLocal {
			abs, _ := filepath.Abs(wc.Path)
			if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
				r.fail(what, abs+" is not a directory", "create it or fix workspaces."+n+".path")
				continue
			}
			r.ok(what, p.Destination(n))
			continue
		}
		if wc.IsRemote() {
			r.ok(what, p.Destination(n)+"; "+remoteLiveness(cfg, n))
			continue
		}
		run, err := runnerFactory(cfg, nil)(n, wc.Destination)
		if err != nil {
			r.fail(what, err.Error(), "")
			continue
		}
		err = nil
		if c, ok := run.(workspaces.Checker); ok {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			err = c.Check(ctx)
			cancel()
		}
		if c, ok := run.(io.Closer); ok {
			c.Close()
		}
		if err != nil {
			r.fail(what, err.Error(), "")
			continue
		}
		detail := p.Destination(n)
		if d, ok := run.(workspaces.Describer); ok {
			detail = d.Describe()
		}
		r.ok(what, detail)
	}
}

func writeJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return errors.Join(errors.New("encode JSON"), err)
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}
