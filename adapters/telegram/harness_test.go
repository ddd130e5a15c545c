package telegram

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/adapters/telegram/telegramtest"
	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/hub/hubtest"
	"github.com/a6afc2ce/hermes-hub/internal/testkit"
	"github.com/a6afc2ce/hermes-hub/store"
)

// testVerbs are verbs only the tests register: test.count records each
// call by id (across restarts: the counter outlives runtimes), test.block
// waits until the test releases it.
type testVerbs struct {
	mu      sync.Mutex
	counts  map[string]int
	release chan struct{}
	started chan string
}

func newTestVerbs() *testVerbs {
	return &testVerbs{counts: map[string]int{}, release: make(chan struct{}), started: make(chan string, 16)}
}

type countArgs struct {
	ID string `json:"id"`
}

type countResult struct {
	executor.Result
	Calls int `json:"calls"`
}

type blockArgs struct {
	Name string `json:"name"`
}

type blockResult struct {
	executor.Result
	Name string `json:"name"`
}

func (v *testVerbs) count(id string) int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.counts[id]
}

func (v *testVerbs) register(reg *executor.Registry) error {
	err := executor.Register(reg, executor.Info{Name: "test.count", Summary: "Count a call"}, executor.VerbFunc[countArgs, countResult](
		func(ctx context.Context, a countArgs) (countResult, error) {
			// Slow enough that a stop lands in the middle of a backlog.
			time.Sleep(2 * time.Millisecond)
			v.mu.Lock()
			defer v.mu.Unlock()
			v.counts[a.ID]++
			return countResult{Calls: v.counts[a.ID]}, nil
		}))
	if err != nil {
		return err
	}
	return executor.Register(reg, executor.Info{Name: "test.block", Summary: "Wait until the test releases it"}, executor.VerbFunc[blockArgs, blockResult](
		func(ctx context.Context, a blockArgs) (blockResult, error) {
			select {
			case v.started <- a.Name:
			default:
			}
			select {
			case <-v.release:
			case <-ctx.Done():
				return blockResult{}, ctx.Err()
			}
			return blockResult{Name: a.Name}, nil
		}))
}

// harness is a hub Runtime on temp dirs with the adapter running against
// a fake Bot API.
type harness struct {
	t      testing.TB
	fake   *telegramtest.Server
	cfg    *config.Config
	he     *hubtest.Env
	rt     *hub.Runtime
	ad     *Adapter
	ws     string
	state  string
	tv     *testVerbs
	clk    clock.Clock
	cancel context.CancelFunc
	done   chan error
	mounts map[string]http.Handler
	closed bool
}

type hopts struct {
	clk      clock.Clock
	mode     string
	mount    func(pattern string, h http.Handler)
	public   string
	limitsOn bool
	rate     *Limits // with limitsOn: these instead of the configuration's defaults
	ws       string  // reuse a workspace (restart)
	tv       *testVerbs
	defaults []string // default_roles
	noStart  bool
	// endpoint and token replace the fake's (an emulator instead).
	endpoint, token string
	logger          *slog.Logger
	// progress shows progress on the adapter's view, with the runtime on
	// clk too.
	progress bool
	// configure changes the configuration before the runtime opens.
	configure func(*config.Config)
}

func testTelegramConfig(t testing.TB, f *telegramtest.Server, o hopts, ws, state string) *config.Config {
	t.Helper()
	cfg := hubtest.Config(t, ws, state)
	cfg.Access.Roles = map[string]config.Role{"admin": {Verbs: []string{"*"}}}
	cfg.Access.Grants = map[string][]string{"telegram:1": {"admin"}, "telegram:2": {"reader"}}
	cfg.Access.DefaultRoles = o.defaults
	cfg.Outbox.BackoffBase = config.Duration(50 * time.Millisecond)
	cfg.Outbox.BackoffMax = config.Duration(200 * time.Millisecond)
	tg := &cfg.Telegram
	tg.Enabled = true
	if f != nil {
		tg.Token = config.NewSecret(f.Token())
		tg.APIEndpoint = f.URL()
	}
	if o.endpoint != "" {
		tg.Token = config.NewSecret(o.token)
		tg.APIEndpoint = o.endpoint
	}
	tg.PollTimeout = config.Duration(2 * time.Second)
	tg.Mode = ModePolling
	if o.mode != "" {
		tg.Mode = o.mode
	}
	tg.Webhook.SecretToken = config.NewSecret("s3cret_token-1")
	if !o.limitsOn {
		tg.Rate.PerChat, tg.Rate.PerChatBurst, tg.Rate.PerGroupPerMinute, tg.Rate.GlobalPerSecond = 0, 0, 0, 0
	} else if r := o.rate; r != nil {
		tg.Rate.PerChat, tg.Rate.PerChatBurst, tg.Rate.PerGroupPerMinute, tg.Rate.GlobalPerSecond = r.PerChat, r.PerChatBurst, r.PerGroupPerMinute, r.GlobalPerSecond
	}
	if o.configure != nil {
		o.configure(cfg)
	}
	return cfg
}

// startHarness opens a Runtime, builds the adapter, registers its sender,
// starts the runtime and runs the adapter.
func startHarness(t testing.TB, f *telegramtest.Server, o hopts) *harness {
	t.Helper()
	ws := o.ws
	if ws == "" {
		ws = t.TempDir()
		os.WriteFile(filepath.Join(ws, "README.md"), []byte("# hello\n"), 0o644)
	}
	state := filepath.Join(ws, ".hub")
	if o.tv == nil {
		o.tv = newTestVerbs()
	}
	if o.clk == nil {
		o.clk = clock.Real{}
	}
	cfg := testTelegramConfig(t, f, o, ws, state)
	if o.configure != nil {
		o.configure(cfg)
	}
	logger := o.logger
	if logger == nil {
		logger = testkit.Discard()
	}
	ropts := hub.RuntimeOptions{Logger: logger}
	if o.progress {
		ropts.Clock = o.clk
	}
	he := hubtest.Open(t, cfg, hubtest.Options{
		Runtime: ropts,
		Register: func(reg *executor.Registry, cfg *config.Config, st *store.State) error {
			ws, err := hubtest.RealVerbs(reg, cfg)
			if err != nil {
				return err
			}
			t.Cleanup(func() { ws.Close() })
			return o.tv.register(reg)
		},
	})
	rt := he.Runtime
	h := &harness{t: t, he: he, fake: f, cfg: cfg, rt: rt, ws: ws, state: state, tv: o.tv, clk: o.clk, done: make(chan error, 1), mounts: map[string]http.Handler{}}
	mount := func(pattern string, hd http.Handler) { h.mounts[pattern] = hd }
	if o.mount != nil {
		mount = o.mount
	}
	public := o.public
	if public == "" {
		public = "https://hub.invalid"
	}
	var err error
	h.ad, err = New(Options{
		Config: cfg.Telegram, PublicURL: public, Clock: o.clk, Logger: logger,
		Intake: rt.Hub, Cursors: rt.State.Cursors("telegram"), Status: rt.Board.Reporter("telegram"),
		Mount: mount,
	})
	if err != nil {
		t.Fatal(err)
	}
	p := h.ad.Platform() // attached as cmd/hub serve does
	if !o.progress {
		p.Progress = nil
	}
	if err := rt.Attach(p); err != nil {
		t.Fatal(err)
	}
	he.Start(t)
	t.Cleanup(h.stop)
	if !o.noStart {
		h.run()
	}
	return h
}

func (h *harness) run() {
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() { h.done <- h.ad.Run(ctx) }()
}

// stop cancels the adapter, waits for Run, and closes the runtime.
func (h *harness) stop() {
	if h.closed {
		return
	}
	h.closed = true
	if h.cancel != nil {
		h.cancel()
		select {
		case err := <-h.done:
			if err != nil {
				h.t.Errorf("adapter Run: %v", err)
			}
		case <-time.After(30 * time.Second):
			h.t.Errorf("adapter Run did not return after cancel")
		}
	}
	if err := h.he.Close(); err != nil {
		h.t.Errorf("runtime close: %v", err)
	}
}

// boardState returns the adapter's state on the runtime's board.
func (h *harness) boardState() hub.State {
	for _, s := range h.rt.Board.All() {
		if s.Name == "telegram" {
			return s.State
		}
	}
	return ""
}

// waitRunning waits until the adapter has connected and polls.
func (h *harness) waitRunning() {
	h.t.Helper()
	testkit.WaitFor(h.t, "adapter running", func() bool { return h.boardState() == "running" })
}

// autoAdvance moves a fake clock to each timer as it is armed, so code that
// waits on it (backoff, pauses) runs without real sleeps.
func autoAdvance(t testing.TB, clk *clock.Fake) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if next, ok := clk.NextDue(); ok {
				clk.Set(next)
			}
			time.Sleep(time.Millisecond)
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}
