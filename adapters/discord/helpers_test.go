package discord

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/adapters/discord/discordtest"
	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/hub/hubtest"
	"github.com/a6afc2ce/hermes-hub/internal/testkit"
	"github.com/a6afc2ce/hermes-hub/store"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// Identities of the test configuration.
const (
	adminUser    = "700000000000000001"
	readerUser   = "700000000000000002"
	strangerUser = "700000000000000003"
	opsRole      = "710000000000000001"
	botToken     = "fake-bot-token-0123456789"
)

type envOptions struct {
	clock       clock.Clock
	concurrency int
	noRun       bool // build everything but do not open the gateway
	discord     func(*config.Discord)
	mirrorFull  *atomic.Bool // while true, every mirror write fails with ENOSPC
	progress    bool         // install the adapter's progress view on the hub
	// beforeStart runs once the adapter is built, before the runtime starts
	// (and finalises the progress messages a previous run left).
	beforeStart func(*testEnv)
	// configure changes the configuration before the runtime opens.
	configure func(*config.Config)
}

// testEnv is a real hub runtime on temp dirs (real verbs, a temp
// workspace) with the adapter talking to a fake Discord.
type testEnv struct {
	t      testing.TB
	fake   *discordtest.Server
	cfg    *config.Config
	rt     *hub.Runtime
	ad     *Adapter
	ws     string
	cancel context.CancelFunc
	done   chan error
	ids    atomic.Int64
}

func testRegistry(t testing.TB) *executor.Registry {
	t.Helper()
	reg := executor.NewRegistry()
	w, err := hubtest.RealVerbs(reg, hubtest.Config(t, "", ""))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return reg
}

func newEnv(t testing.TB, o envOptions) *testEnv {
	t.Helper()
	fake := newFakeDiscord(t)
	ws := t.TempDir()
	state := filepath.Join(ws, ".hub")
	if err := os.WriteFile(filepath.Join(ws, "README.md"), []byte("# hello\nsecond line\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := hubtest.Config(t, ws, state)
	cfg.Access.Roles = map[string]config.Role{"admin": {Verbs: []string{"*"}}, "readers": {Verbs: []string{"fs.read*", "fs.listDir", "fs.exists"}}}
	cfg.Access.Grants = map[string][]string{
		"discord:" + adminUser: {"admin"}, "discord:" + readerUser: {"readers"}, "discord-role:" + opsRole: {"admin"},
	}
	mention := true
	cfg.Discord = config.Discord{
		Enabled: true, Token: config.NewSecret(botToken), ApplicationID: fake.AppID, APIBase: fake.APIBase(),
		CommandGuilds: []string{fake.GuildID}, Prefix: "!", Mention: &mention,
		CDNBase: fake.CDNBase(),
	}
	if o.discord != nil {
		o.discord(&cfg.Discord)
	}
	if o.configure != nil {
		o.configure(cfg)
	}
	he := hubtest.Open(t, cfg, hubtest.Options{Runtime: hub.RuntimeOptions{Clock: o.clock, Logger: testkit.Discard(), MirrorOpenFile: flakyMirror(o.mirrorFull)}})
	rt := he.Runtime
	e := &testEnv{t: t, fake: fake, cfg: cfg, rt: rt, ws: ws}
	e.ids.Store(920000000000000000)
	var err error
	e.ad, err = New(Options{Config: cfg.Discord, Intake: rt.Hub, Status: rt.Board.Reporter(Name), Clock: o.clock, Logger: testkit.Discard(), Concurrency: o.concurrency})
	if err != nil {
		t.Fatal(err)
	}
	p := e.ad.Platform() // attached as cmd/hub serve does
	if !o.progress {
		p.Progress = nil
	}
	if err := rt.Attach(p); err != nil {
		t.Fatal(err)
	}
	if o.beforeStart != nil {
		o.beforeStart(e)
	}
	he.Start(t)
	t.Cleanup(e.stop) // before the harness closes the runtime
	if !o.noRun {
		e.start()
	}
	return e
}

// start runs the adapter and waits until it has identified and registered
// its commands.
func (e *testEnv) start() {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel, e.done = cancel, make(chan error, 1)
	identifies := len(e.fake.Identifies())
	puts := len(e.fake.RequestsTo("PUT", "/applications/"))
	go func() { e.done <- e.ad.Run(ctx) }()
	e.fake.WaitFor(e.t, "identify and command registration", func() bool {
		n := len(e.fake.RequestsTo("PUT", "/applications/"))
		return len(e.fake.Identifies()) > identifies && n > puts
	})
}

// stop ends the adapter's Run and waits for it.
func (e *testEnv) stop() {
	if e.cancel == nil {
		return
	}
	e.cancel()
	select {
	case err := <-e.done:
		if err != nil {
			e.t.Errorf("adapter Run: %v", err)
		}
	case <-time.After(30 * time.Second):
		e.t.Errorf("adapter Run did not return")
	}
	e.cancel = nil
}

// restart replaces the adapter with a new one on the same runtime, as a
// restarted hub would have.
func (e *testEnv) restart() {
	e.t.Helper()
	e.stop()
	ad, err := New(Options{Config: e.cfg.Discord, Intake: e.rt.Hub, Status: e.rt.Board.Reporter(Name), Logger: testkit.Discard()})
	if err != nil {
		e.t.Fatal(err)
	}
	e.ad = ad
	if err := e.rt.Mux.Handle("chat:discord", ad.Sender()); err != nil {
		e.t.Fatal(err)
	}
	e.start()
}

func (e *testEnv) nextID() string { return strconv.FormatInt(e.ids.Add(1), 10) }

// interact dispatches an INTERACTION_CREATE in the guild's channel and
// returns the interaction with its id and token filled in.
func (e *testEnv) interact(user string, command string, opts ...opt) interaction {
	return e.interactWithRoles(user, nil, command, opts...)
}

func (e *testEnv) interactWithRoles(user string, roles []string, command string, opts ...opt) interaction {
	i := interaction{ID: e.nextID(), Channel: e.fake.ChannelID, Guild: e.fake.GuildID, User: user, Roles: roles, Command: command, Options: opts}
	i.Token = "itok-" + i.ID
	e.fake.Dispatch("INTERACTION_CREATE", e.fake.InteractionPayload(i))
	return i
}

// say dispatches a MESSAGE_CREATE in the guild's channel.
func (e *testEnv) say(user, content string) channelMsg {
	m := channelMsg{ID: e.nextID(), Channel: e.fake.ChannelID, Guild: e.fake.GuildID, User: user, Content: content}
	e.fake.Dispatch("MESSAGE_CREATE", e.fake.MessagePayload(m))
	return m
}

// waitOriginal waits until the interaction's original response was edited
// and returns it.
func (e *testEnv) waitOriginal(i interaction) fakeMessage {
	e.t.Helper()
	e.fake.WaitFor(e.t, "the original response of "+i.ID, func() bool {
		c, ok := e.fake.Callback(i.ID)
		return ok && c.Original != nil
	})
	c, _ := e.fake.Callback(i.ID)
	return *c.Original
}

// waitReply waits for a channel message that replies to m.
func (e *testEnv) waitReply(m channelMsg) fakeMessage {
	e.t.Helper()
	var out fakeMessage
	e.fake.WaitFor(e.t, "a reply to message "+m.ID, func() bool {
		for _, x := range e.fake.ChannelMessages(m.Channel) {
			if x.Reference == m.ID {
				out = x
				return true
			}
		}
		return false
	})
	return out
}

// readMirror calls fn for every mirror record of this run.
func (e *testEnv) readMirror(fn func(store.MirrorRecord)) {
	e.t.Helper()
	err := store.ReadMirror(e.rt.State.Flows(), store.MirrorFilter{RunID: e.rt.RunID}, func(r store.MirrorRecord) error {
		fn(r)
		return nil
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

// waitMirror waits until a mirror record satisfies cond.
func (e *testEnv) waitMirror(what string, cond func(store.MirrorRecord) bool) {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		found := false
		e.readMirror(func(r store.MirrorRecord) { found = found || cond(r) })
		if found {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out waiting for %s in the mirror", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// flakyMirror opens mirror files whose writes fail with ENOSPC while full
// is true (nil: plain files).
func flakyMirror(full *atomic.Bool) func(*os.Root, string, int, os.FileMode) (store.MirrorFile, error) {
	if full == nil {
		return nil
	}
	return func(root *os.Root, name string, flag int, perm os.FileMode) (store.MirrorFile, error) {
		f, err := root.OpenFile(name, flag, perm)
		if err != nil {
			return nil, err
		}
		return &flakyFile{File: f, full: full}, nil
	}
}

type flakyFile struct {
	*os.File
	full *atomic.Bool
}

func (f *flakyFile) Write(p []byte) (int, error) {
	if f.full.Load() {
		return 0, &os.PathError{Op: "write", Path: f.Name(), Err: syscall.ENOSPC}
	}
	return f.File.Write(p)
}
