package hub_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/hub/hubtest"
	"github.com/a6afc2ce/hermes-hub/internal/testkit"
	"github.com/a6afc2ce/hermes-hub/store"
)

// logMessages is a slog handler that keeps the messages logged, so a test
// can tell that the hub reached a point it only logs.
type logMessages struct {
	mu   sync.Mutex
	msgs []string
}

func (l *logMessages) Enabled(context.Context, slog.Level) bool { return true }
func (l *logMessages) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logMessages) WithGroup(string) slog.Handler            { return l }
func (l *logMessages) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, r.Message)
	return nil
}

func (l *logMessages) saw(prefix string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, m := range l.msgs {
		if strings.HasPrefix(m, prefix) {
			return true
		}
	}
	return false
}

// openSlowEnv opens a runtime on state whose only verb is test.slow,
// logging to logs when it is not nil, and starts it.
func openSlowEnv(t *testing.T, state string, verb *hubtest.SlowVerb, logs slog.Handler) (*hubtest.Env, *hubtest.Recorder) {
	t.Helper()
	cfg := hubtest.Config(t, t.TempDir(), state)
	cfg.Access.Roles = map[string]config.Role{"runner": {Verbs: []string{"test.*"}}}
	cfg.Access.Grants = map[string][]string{"telegram:1": {"runner"}}
	opts := hubtest.Options{Register: verb.Register}
	if logs != nil {
		opts.Runtime.Logger = slog.New(logs)
	}
	he := hubtest.Open(t, cfg, opts)
	rec := hubtest.NewRecorder()
	rec.HandleAll(t, he.Runtime)
	he.Start(t)
	return he, rec
}

// TestAcceptedTurnsAnsweredBeforeTheChatsNewOnes: turns a chat sent before
// the hub stopped, accepted and not run, are answered at the next start
// before the turns the same chat sends to the new run, which wait for them
// (the messages of a Discord channel are answered in the order they were
// sent, across a restart). A repeated delivery of a waiting turn runs
// nothing, and a turn whose wait is cut short stays accepted.
func TestAcceptedTurnsAnsweredBeforeTheChatsNewOnes(t *testing.T) {
	state := t.TempDir()
	slow := tgMsg(1, 10, "/test.slow")
	held := tgMsg(1, 11, "/whoami")
	he, _ := openSlowEnv(t, state, hubtest.NewSlowVerb(), nil)
	for _, in := range []*chat.Inbound{slow, held} {
		if err := he.Runtime.Hub.Accept(context.Background(), in); err != nil {
			t.Fatal(err)
		}
	}
	if err := he.Close(); err != nil {
		t.Fatal(err)
	}

	// The next start runs the accepted turns in order; the first one is
	// slow, so the second one has not run when the chat's next turn comes.
	verb, logs := hubtest.NewSlowVerb(), &logMessages{}
	he, rec := openSlowEnv(t, state, verb, logs)
	wait(t, verb.Started)
	type result struct {
		res *hub.TurnResult
		err error
	}
	handle := func(ctx context.Context, in *chat.Inbound) <-chan result {
		done := make(chan result, 1)
		go func() {
			res, err := he.Runtime.Hub.Handle(ctx, in)
			done <- result{res, err}
		}()
		return done
	}
	next := tgMsg(1, 12, "/whoami")
	nextDone := handle(context.Background(), next)
	var early *result
	testkit.WaitFor(t, "the new turn to wait or to be answered", func() bool {
		select {
		case r := <-nextDone:
			early = &r
			return true
		default:
			return logs.saw("turn waits for the turns of its chat accepted before the last stop")
		}
	})
	if early != nil {
		t.Fatalf("the chat's new turn was answered (%+v, %v) before the turns it sent before the stop", early.res, early.err)
	}
	// The same chat's turn accepted now, whose wait ends with its adapter
	// (the hub stopping again), is not run and stays accepted.
	cut := tgMsg(1, 13, "/whoami")
	if err := he.Runtime.Hub.Accept(context.Background(), cut); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cutDone := handle(ctx, cut)
	cancel()
	if r := wait(t, cutDone); r.err == nil {
		t.Fatalf("a turn whose wait was cut short ran: %+v", r.res)
	}
	if rec, err := he.Runtime.Ledger.Get(cut.TurnID); err != nil || rec == nil || rec.State != store.TurnReceived {
		t.Fatalf("the cut turn's ledger record is %+v (%v), want received", rec, err)
	}
	// A repeated delivery of the waiting accepted turn waits too, then
	// finds it answered.
	againDone := handle(context.Background(), held)

	verb.Finish()
	if r := wait(t, nextDone); r.err != nil || r.res.Status != hub.StatusBuiltin {
		t.Fatalf("the chat's new turn: %+v %v", r.res, r.err)
	}
	if r := wait(t, againDone); r.err != nil || r.res.Status != hub.StatusDuplicate {
		t.Fatalf("the repeated delivery: %+v %v", r.res, r.err)
	}
	got := rec.Wait(t, "chat:telegram:100", 3)
	var order []string
	for _, e := range got {
		order = append(order, e.TurnID)
	}
	if want := []string{slow.TurnID, held.TurnID, next.TurnID}; strings.Join(order, " ") != strings.Join(want, " ") {
		t.Fatalf("answers in the order %v, want %v", order, want)
	}
}
