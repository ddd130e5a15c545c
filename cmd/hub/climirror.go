package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/user"
	"strconv"

	"github.com/a6afc2ce/hermes-hub/admin"
	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/store"
)

// Mirror records of CLI calls: kind "cli" on platform "cli", the actor
// "cli:<user>", and the local user's name and uid in meta.
const (
	kindCLI     = "cli"
	platformCLI = "cli"
)

// cliMirror mirrors what the CLI changes (and, with mirror.cli: all, every
// call) so that every exchange is mirrored, the operator's too. Each CLI
// invocation gets its own run, flows/<run_id>/ marked as a CLI run and
// locked while it is open, opened on its first record: a running hub
// appends to its own run only, so nothing is shared, and the database is
// never needed. The CLI never prunes runs on its own (the hub does when it
// starts, and `hub mirror prune` when asked); CLI runs are kept by their
// own retention (mirror.retention.cli), so they never make the hub's go.
type cliMirror struct {
	state string // the state directory, opened with the first record
	dir   *store.StateDir
	opts  store.MirrorOptions
	all   bool
	clk   clock.Clock
	user  string
	uid   string
	m     *store.Mirror
}

func newCLIMirror(cfg *config.Config) *cliMirror {
	name, uid := "unknown", strconv.Itoa(os.Getuid())
	if u, err := user.Current(); err == nil {
		name, uid = u.Username, u.Uid
	}
	clk := clock.Real{}
	return &cliMirror{
		state: cfg.StateDir,
		opts:  store.MirrorOptions{RotateBytes: int64(cfg.Mirror.RotateBytes), Kind: store.RunCLI, Clock: clk},
		all:   cfg.Mirror.CLI == config.MirrorCLIAll,
		clk:   clk,
		user:  name,
		uid:   uid,
	}
}

// wants reports whether a call of verb (canonical or as given) is
// mirrored: one that may change something always, a read-only one or one
// that names no known verb only with mirror.cli: all. durable says whether
// its records are fsynced before the call goes on: all but those of a known
// read-only verb, as for the hub's API calls.
func (c *cliMirror) wants(reg *executor.Registry, verb string) (mirrored, durable bool) {
	if c == nil {
		return false, false
	}
	info, ok := reg.Lookup(verb)
	if ok && info.ReadOnly {
		return c.all, false
	}
	return ok || c.all, true
}

// record appends one line in direction (store.DirectionInbound for what the
// operator asked, store.DirectionOutbound for the answer), durably.
func (c *cliMirror) record(ctx context.Context, direction, turnID, text string, meta map[string]string) error {
	return c.append(ctx, direction, turnID, text, meta, true)
}

// append appends one line in direction; with durable, it returns once the
// line is fsynced, without, once it is written (a crash of the process
// loses nothing, one of the machine may).
func (c *cliMirror) append(ctx context.Context, direction, turnID, text string, meta map[string]string, durable bool) error {
	if c.m == nil {
		if err := c.open(); err != nil {
			return fmt.Errorf("mirror the CLI call: %w", err)
		}
	}
	all := map[string]string{"user_name": c.user, "uid": c.uid, "turn_id": turnID}
	for k, v := range meta {
		all[k] = v
	}
	rec := store.MirrorRecord{
		Direction: direction, Platform: platformCLI, ChatID: c.user, MessageID: turnID,
		Actor: "cli:" + c.user, Kind: kindCLI, Text: text, Meta: all,
	}
	if err := c.m.Append(ctx, rec, durable); err != nil {
		return fmt.Errorf("mirror the CLI call: %w", err)
	}
	return nil
}

// openTries bounds how many run ids open tries: another invocation may
// have started in the same second with the same random suffix.
const openTries = 8

// cliCall is what call decided for one verb call: whether it is mirrored,
// and whether its records are fsynced.
type cliCall struct {
	mirrored, durable bool
}

// call mirrors one verb call made from the CLI, before it runs: a call
// that cannot be mirrored does not run. The inbound record of a read-only
// verb is written, not waited for on disk (like the hub's API calls); that
// of any other call is fsynced before it runs.
func (c *cliMirror) call(ctx context.Context, reg *executor.Registry, env executor.Envelope, turnID string) (cliCall, error) {
	mirrored, durable := c.wants(reg, env.Verb)
	if !mirrored {
		return cliCall{}, nil
	}
	text := string(env.Arguments)
	if text == "" {
		text = "{}"
	}
	ws := executor.CallFrom(ctx).Workspace
	if ws == "" {
		ws = executor.DefaultWorkspace
	}
	cc := cliCall{mirrored: true, durable: durable}
	return cc, c.append(ctx, store.DirectionInbound, turnID, text, map[string]string{"verb": env.Verb, "workspace": ws}, durable)
}

// result mirrors the outcome of a mirrored call, as durably as its call.
func (c *cliMirror) result(ctx context.Context, cc cliCall, o *executor.Outcome, verb, turnID string) error {
	meta := map[string]string{store.MetaVerb: verb, "succeeded": strconv.FormatBool(o.Succeeded())}
	if !o.Succeeded() {
		meta[store.MetaErrorCode] = string(o.Err.Code)
	}
	return c.append(ctx, store.DirectionOutbound, turnID, string(o.JSON()), meta, cc.durable)
}

// open opens the state directory and starts the invocation's run in it,
// under a fresh run id.
func (c *cliMirror) open() error {
	if c.dir == nil {
		dir, err := store.OpenStateDir(c.state)
		if err != nil {
			return err
		}
		c.dir = dir
	}
	for i := 1; ; i++ {
		m, err := store.OpenMirror(c.dir.Flows(), store.NewRunID(c.clk.Now()), c.opts)
		if err == nil {
			c.m = m
			return nil
		}
		if !errors.Is(err, store.ErrRunOpen) || i == openTries {
			return err
		}
	}
}

// Close closes the run's files and the state directory, if they were
// opened.
func (c *cliMirror) Close() error {
	if c == nil {
		return nil
	}
	var errs []error
	if c.m != nil {
		errs = append(errs, c.m.Close())
	}
	if c.dir != nil {
		errs = append(errs, c.dir.Close())
	}
	return errors.Join(errs...)
}

// deliver mirrors a delivery made from the CLI (hub send, hub exec
// --deliver) around do, which performs it: what is sent before, the turn
// and chunks after. A delivery that cannot be mirrored is not made.
func (c *cliMirror) deliver(ctx context.Context, action, text, turnID string, do func() (admin.DeliverResult, error)) (admin.DeliverResult, error) {
	meta := map[string]string{"action": action}
	if err := c.record(ctx, store.DirectionInbound, turnID, text, meta); err != nil {
		return admin.DeliverResult{}, err
	}
	res, err := do()
	out := map[string]string{"action": action, "succeeded": strconv.FormatBool(err == nil)}
	answer := ""
	if err != nil {
		answer = err.Error()
	} else {
		b, _ := json.Marshal(res)
		answer = string(b)
		if turnID == "" {
			out["turn_id"] = res.TurnID
		}
	}
	if merr := c.record(ctx, store.DirectionOutbound, turnID, answer, out); merr != nil && err == nil {
		return res, merr
	}
	return res, err
}
