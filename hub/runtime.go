package hub

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/outbox"
	"github.com/a6afc2ce/hermes-hub/store"
	"github.com/a6afc2ce/hermes-hub/workspaces/policy"
)

// Runtime is everything `hub serve` runs besides the adapters, over a state
// root opened by the caller: the mirror of this run, the channel directory,
// the delivery targets, the outbox and its dispatcher, the turn ledger, the
// conversations feed and the router. The platforms are attached (Attach)
// before Start.
type Runtime struct {
	Config        *config.Config
	State         *store.State
	Mirror        *store.Mirror
	Targets       *store.Targets
	Outbox        *outbox.Outbox
	Mux           *outbox.Mux
	Ledger        *store.Ledger
	Hub           *Hub
	Board         *StateBoard
	Conversations *Conversations
	// Schedules runs the configured schedules once Start has run.
	Schedules *Scheduler
	RunID     string
	Started   time.Time
	log       *slog.Logger

	dispatchDone chan error
	running      atomic.Bool
	closeOnce    sync.Once
	clock        clock.Clock
	prune        struct {
		mu     sync.Mutex
		timer  clock.Timer
		closed bool
		wg     sync.WaitGroup
		// ctx ends when the runtime closes (stopPruning), stopping a
		// prune under way.
		ctx    context.Context
		cancel context.CancelFunc
	}
	stopPending  context.CancelFunc
	pendingDone  chan struct{}
	stopDispatch context.CancelFunc
	reloader     atomic.Pointer[Reloader]        // nil: not reloadable (EnableReload)
	retention    atomic.Pointer[store.Retention] // nil: the configuration's (RetentionReloadable)

	platformsMu sync.Mutex
	platforms   []Platform // attached, in order (Attach)
}

// RuntimeOptions adjust a Runtime for tests.
type RuntimeOptions struct {
	Clock  clock.Clock
	Logger *slog.Logger
	// SessionFor is passed to the Hub.
	SessionFor func(in *chat.Inbound, roles []string) string
	// Destinations describes the workspaces' destinations (the open
	// workspaces' runners); nil: from the configuration.
	Destinations Destinations
	// Remote runs the calls of remote workspaces on their nodes; nil:
	// such calls fail with a clear message.
	Remote Remote
	// Offline opens the state for the CLI while no hub runs: no mirror run
	// is started (so no empty run directories appear and none are pruned
	// unless asked: PruneMirrors).
	Offline bool
	// MirrorOpenFile replaces how the mirror opens its files, by their
	// names in the flows directory root (tests inject write failures with
	// it); nil opens them on disk.
	MirrorOpenFile func(root *os.Root, name string, flag int, perm os.FileMode) (store.MirrorFile, error)
	// Observer hears every turn and verb call (metrics); nil: no one.
	Observer Observer
	// OutboxEvents hears what happens to outbox entries besides the
	// mirror (metrics); nil: no one.
	OutboxEvents outbox.Events
}

// Open wires a Runtime around x over the state root st, which the caller
// opened (before building x, whose verbs may keep metadata in it) and closes
// after Close. On error everything Open opened is closed again.
func Open(cfg *config.Config, st *store.State, x *executor.Executor, opts RuntimeOptions) (rt *Runtime, err error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	rt = &Runtime{
		Config: cfg, State: st, log: opts.Logger, Board: &StateBoard{Clock: opts.Clock}, Started: opts.Clock.Now(), clock: opts.Clock,
		Conversations: NewConversations(st.Flows()),
	}
	rt.prune.ctx, rt.prune.cancel = context.WithCancel(context.Background())
	var closers []func() error
	defer func() {
		if err != nil {
			for i := len(closers) - 1; i >= 0; i-- {
				_ = closers[i]()
			}
		}
	}()
	rt.Ledger, err = store.OpenSharedLedger(st.Database())
	if err != nil {
		return nil, err
	}
	if !opts.Offline {
		// A run id names a process run by its wall-clock start, whatever clock
		// the runtime is given, so runs sort by when they really happened.
		rt.RunID = store.NewRunID(clock.Real{}.Now())
		rt.Mirror, err = store.OpenMirror(st.Flows(), rt.RunID, store.MirrorOptions{
			RotateBytes: int64(cfg.Mirror.RotateBytes), Kind: store.RunServe, Logger: opts.Logger,
			MaxTextBytes: int(cfg.Mirror.MaxTextBytes),
			OpenFile:     opts.MirrorOpenFile, Clock: opts.Clock,
		})
		if err != nil {
			return nil, err
		}
		closers = append(closers, rt.Mirror.Close)
		if _, err := rt.PruneMirrors(false); err != nil {
			opts.Logger.Warn("mirror retention: could not remove every old run", "err", err)
		}
	}
	dir, err := store.OpenDirectory(rt.State.Root(), store.ChannelDirectory, rt.DirectoryOptions())
	if err != nil {
		// The directory is a derived cache: a corrupt file must not stop the
		// hub. It is left untouched and the hub runs without a directory.
		opts.Logger.Error("channel directory unavailable; run `hub channels rebuild` to rebuild it from the mirrors", "err", err)
		dir = nil
	} else {
		closers = append(closers, dir.Close)
	}
	progress, err := store.OpenProgressMessages(st.DB())
	if err != nil {
		return nil, err
	}
	rt.Targets, err = store.OpenTargets(rt.State.Root(), store.DeliveryTargetsFile)
	if err != nil {
		return nil, err
	}
	bs, err := outbox.NewSharedBoltStore(rt.State.Database())
	if err != nil {
		return nil, err
	}
	accessState, err := store.OpenAccess(rt.State.DB())
	if err != nil {
		return nil, err
	}
	rt.Mux = outbox.NewMux()
	if err := rt.Mux.Handle("local", outbox.NewLocalSender(rt.State.StateDir, rt.Config.Outbox.LocalRoots, opts.Clock)); err != nil {
		return nil, err
	}
	var events outbox.Events = outbox.NopEvents{}
	if rt.Mirror != nil {
		events = &mirrorEvents{mirror: rt.Mirror, conv: rt.Conversations, clock: opts.Clock, log: opts.Logger}
	}
	if opts.OutboxEvents != nil {
		events = bothEvents{events, opts.OutboxEvents}
	}
	rt.Outbox = outbox.New(bs, rt.Mux, outbox.Options{
		Concurrency: cfg.Outbox.Concurrency,
		MaxAttempts: cfg.Outbox.MaxAttempts,
		Backoff:     outbox.Backoff{Base: cfg.Outbox.BackoffBase.D(), Max: cfg.Outbox.BackoffMax.D()},
		SendTimeout: cfg.Outbox.SendTimeout.D(),
		Retention:   cfg.Outbox.Retention.D(),
		Clock:       opts.Clock,
		Events:      events,
		Logger:      opts.Logger,
		Files:       st.Files(),
	})
	commands := NewCommands(x.Registry())
	if err := commands.Replace(cfg.Commands); err != nil {
		return nil, err
	}
	confirmations, err := store.OpenConfirmations(st.Database())
	if err != nil {
		return nil, err
	}
	rt.Hub, err = New(Options{
		Confirmations:  confirmations,
		Executor:       x,
		Access:         NewAccess(cfg.Access, x.Registry()),
		Ledger:         rt.Ledger,
		Outbox:         rt.Outbox,
		Mirror:         rt.Mirror,
		Directory:      dir,
		Targets:        rt.Targets,
		Conversations:  rt.Conversations,
		OverflowChunks: cfg.Outbox.OverflowChunks,
		ChunkMarkers:   cfg.Outbox.ChunkMarkers,
		VerbTimeout:    cfg.Verbs.Timeout.D(),
		ProgressAfter:  cfg.Verbs.ProgressAfter.D(),
		ProgressEvery:  cfg.Verbs.ProgressEvery.D(),
		Progress:       progress,
		SessionFor:     opts.SessionFor,
		Workspaces:     policy.New(cfg),
		Choices:        st.Choices(),
		Destinations:   opts.Destinations,
		Remote:         opts.Remote,
		Observer:       opts.Observer,
		Clock:          opts.Clock,
		Logger:         opts.Logger,
		AccessState:    accessState,
		Files:          st.Files(),
		FileLimits:     fileLimits(cfg),
		Commands:       commands,
	})
	if err != nil {
		return nil, err
	}
	states, err := store.OpenSchedules(st.Database())
	if err != nil {
		return nil, err
	}
	rt.Schedules, err = NewScheduler(rt.Hub, states, cfg, opts.Clock, opts.Logger)
	if err != nil {
		return nil, err
	}
	return rt, nil
}

// Start finalises the progress messages a previous run left, answers turns
// it died in and starts the dispatcher. Attach every platform before
// calling it.
func (rt *Runtime) Start(ctx context.Context) error {
	// Progress messages first: a Discord one shares its message with the
	// notice Recover may send, which must come after.
	if n, err := rt.Hub.FinishStaleProgress(ctx); err != nil {
		rt.log.Warn("progress messages left by the last stop", "err", err)
	} else if n > 0 {
		rt.log.Info("finalised progress messages left by the last stop", "messages", n)
	}
	n, pending, err := rt.Hub.Recover(ctx)
	if err != nil {
		return fmt.Errorf("recover interrupted turns: %w", err)
	}
	if n > 0 {
		rt.log.Warn("told chats about turns interrupted by the last stop", "turns", n)
	}
	rt.pruneLedger()
	dctx, cancel := context.WithCancel(context.Background())
	rt.stopDispatch = cancel
	rt.dispatchDone = make(chan error, 1)
	go func() { rt.dispatchDone <- rt.Outbox.Run(dctx) }()
	rt.running.Store(true)
	rt.Schedules.Start()
	confirmed, err := rt.Hub.confirmedNotDone()
	if err != nil {
		rt.log.Warn("held calls confirmed before the last stop", "err", err)
	}
	if len(pending) > 0 || len(confirmed) > 0 {
		// Turns accepted before the last stop and never run: run them now,
		// in the order they arrived, until the runtime closes. The new turns
		// of their chats wait for them, from before the adapters start.
		// Then the held calls confirmed before the last stop whose run had
		// not begun.
		rt.log.Info("running turns accepted before the last stop", "turns", len(pending), "confirmed", len(confirmed))
		rt.Hub.hold(pending)
		rctx, stop := context.WithCancel(context.Background())
		rt.stopPending = stop
		rt.pendingDone = make(chan struct{})
		go func() {
			defer close(rt.pendingDone)
			rt.Hub.runHeld(rctx, pending)
			rt.Hub.resumeConfirmed(rctx, confirmed)
			rt.log.Info("ran the turns accepted before the last stop", "turns", len(pending), "confirmed", len(confirmed), "stopped", rctx.Err() != nil)
		}()
	}
	return nil
}

// ledgerPruneEvery is how often a running hub forgets turns that finished
// longer ago than the outbox's retention.
const ledgerPruneEvery = time.Hour

// pruneLedger forgets old finished turns and denial notices now, then again
// every ledgerPruneEvery until Close.
func (rt *Runtime) pruneLedger() {
	ctx := rt.prune.ctx
	cutoff := rt.clock.Now().Add(-rt.Config.Outbox.Retention.D())
	if turns, denials, err := rt.Ledger.Prune(ctx, cutoff); err != nil {
		if ctx.Err() == nil {
			rt.log.Warn("turn ledger", "err", err)
		}
	} else if turns+denials > 0 {
		rt.log.Info("turn ledger: forgot old turns", "turns", turns, "denials", denials, "finished_before", cutoff.UTC().Format(time.RFC3339))
	}
	if n, err := rt.Hub.PruneConfirmations(cutoff); err != nil {
		rt.log.Warn("held calls", "err", err)
	} else if n > 0 {
		rt.log.Info("held calls: forgot old ones", "calls", n, "decided_before", cutoff.UTC().Format(time.RFC3339))
	}
	p := &rt.prune
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.wg.Add(1)
	p.timer = rt.clock.AfterFunc(ledgerPruneEvery, func() {
		defer p.wg.Done()
		rt.pruneLedger()
	})
}

// stopPruning cancels the next prune, stops one under way (between two
// of its commits) and waits for it.
func (rt *Runtime) stopPruning() {
	p := &rt.prune
	p.mu.Lock()
	p.closed = true
	p.cancel()
	if p.timer != nil && p.timer.Stop() {
		p.wg.Done()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// Status is the running hub's state for GET /api/status: the run, its
// uptime by the runtime's clock, the adapters and the process.
func (rt *Runtime) Status() map[string]any {
	return map[string]any{
		"run_id":   rt.RunID,
		"uptime_s": int64(rt.clock.Now().Sub(rt.Started).Seconds()),
		"adapters": rt.Board.All(),
		"pid":      strconv.Itoa(os.Getpid()),
	}
}

// Running reports whether Start has started the dispatcher, so chunks
// enqueued now are sent now.
func (rt *Runtime) Running() bool { return rt.running.Load() }

// Clock is the runtime's clock.
func (rt *Runtime) Clock() clock.Clock { return rt.clock }

// DirectoryOptions are the options of this runtime's channel directory (its
// clock and logger), for one rebuilt from the mirrors.
func (rt *Runtime) DirectoryOptions() store.DirectoryOptions {
	return store.DirectoryOptions{Clock: rt.clock, Logger: rt.log}
}

// PlatformOff says why chunks for k cannot be sent with this configuration,
// or "" when they can.
func (rt *Runtime) PlatformOff(k chat.Key) string {
	switch {
	case k.Kind == chat.KindWeb && !*rt.Config.Web.Enabled:
		return "the web panel is not enabled in the configuration (web.enabled)"
	case k.Platform == chat.Telegram && !rt.Config.Telegram.Enabled:
		return "Telegram is not enabled in the configuration (telegram.enabled)"
	case k.Platform == chat.Discord && !rt.Config.Discord.Enabled:
		return "Discord is not enabled in the configuration (discord.enabled)"
	}
	return ""
}

// Directory is the channel directory in use (nil when it is unavailable):
// the hub's, which a rebuild replaces.
func (rt *Runtime) Directory() *store.Directory { return rt.Hub.Directory() }

// SetDirectory replaces the channel directory (after a rebuild) for the
// router and for Close, and closes the one it replaces.
func (rt *Runtime) SetDirectory(d *store.Directory) {
	if old := rt.Hub.SetDirectory(d); old != nil && old != d {
		_ = old.Close()
	}
}

// Close stops the dispatcher (in-flight sends finish until ctx expires),
// then closes the directory and the mirror, in that order. The state root
// stays open: its opener closes it.
func (rt *Runtime) Close(ctx context.Context) error {
	var errs []error
	rt.closeOnce.Do(func() {
		// Schedule runs in progress are cut short and delivered first,
		// while the outbox and the mirror take them.
		if err := rt.Schedules.Close(ctx); err != nil {
			errs = append(errs, err)
		}
		rt.stopPruning()
		if rt.pendingDone != nil {
			// A turn cut short here is answered with a notice next time.
			rt.stopPending()
			select {
			case <-rt.pendingDone:
			case <-ctx.Done():
			}
		}
		if rt.dispatchDone != nil {
			if err := rt.Outbox.Shutdown(ctx); err != nil {
				errs = append(errs, fmt.Errorf("outbox shutdown: %w", err))
			}
			rt.stopDispatch()
			select {
			case err := <-rt.dispatchDone:
				// ErrClosed: stopped before the dispatcher got going; fine.
				if err != nil && !errors.Is(err, outbox.ErrClosed) {
					errs = append(errs, err)
				}
			case <-ctx.Done():
				errs = append(errs, fmt.Errorf("outbox did not stop: %w", ctx.Err()))
			}
		}
		if d := rt.Directory(); d != nil {
			if err := d.Close(); err != nil {
				errs = append(errs, err)
			}
		}
		if rt.Mirror != nil {
			if err := rt.Mirror.Close(); err != nil {
				errs = append(errs, err)
			}
		}
	})
	return errors.Join(errs...)
}

// mirrorEvents writes every delivered and dead chunk to the outbound mirror.
// Delivered chunks also go to the conversations feed.
type mirrorEvents struct {
	outbox.NopEvents
	mirror *store.Mirror
	conv   *Conversations
	clock  clock.Clock
	log    *slog.Logger
}

func (m *mirrorEvents) record(e *outbox.Entry, kind, msgID string) store.MirrorRecord {
	meta := map[string]string{store.MetaOutboxID: e.ID, "turn_id": e.TurnID, "chunk": fmt.Sprintf("%d/%d", e.Index+1, e.Total)}
	if n := e.Meta[MetaNode]; n != "" {
		meta[MetaNode], meta[MetaNodeVersion] = n, e.Meta[MetaNodeVersion]
	}
	if c := e.Meta[store.MetaErrorCode]; c != "" {
		meta[store.MetaErrorCode] = c
	}
	if id := e.Meta[MetaConfirm]; id != "" {
		meta[MetaConfirm], meta[MetaConfirmStage] = id, e.Meta[MetaConfirmStage]
	}
	if msgID != "" {
		meta[store.MetaPlatformMessageID] = msgID
	}
	if a := e.Attachment; a != nil {
		meta[MetaAttachment] = a.Name
		if a.Stored() {
			meta[MetaFileSHA256], meta[MetaFileSize] = a.SHA256, strconv.FormatInt(a.Size, 10)
		}
	}
	if e.LastError != "" && kind == store.KindDead {
		meta["last_error"] = e.LastError
		meta["attempts"] = strconv.Itoa(e.Attempts)
	}
	rec := store.MirrorRecord{TS: m.clock.Now().UTC(), Direction: store.DirectionOutbound, Actor: "hub", Kind: kind, Text: mirrorEntryText(e.Text, e.Meta), Meta: meta}
	switch k := e.Target; k.Kind {
	case chat.KindChat:
		rec.Platform, rec.ChatID, rec.ThreadID = string(k.Platform), k.ChatID, k.ThreadID
	case chat.KindWeb:
		rec.Platform = "web"
	case chat.KindLocal:
		rec.Platform, rec.ChatID = "local", k.Path
	}
	rec.MessageID = msgID
	return rec
}

func (m *mirrorEvents) Delivered(e *outbox.Entry, r outbox.Receipt) {
	m.append(e, m.record(e, string(e.Kind), r.MessageID))
}

// DeliveredBatch writes the records of a batch of one target's deliveries
// in order and waits for one fsync that covers them all (the mirror's
// AppendAll) before any of them goes to the conversations feed, so the
// panel shows a chunk only once its record is durable, as Delivered does.
func (m *mirrorEvents) DeliveredBatch(es []*outbox.Entry, rs []outbox.Receipt) {
	recs := make([]store.MirrorRecord, len(es))
	for i, e := range es {
		recs[i] = m.record(e, string(e.Kind), rs[i].MessageID)
	}
	for i, err := range m.mirror.AppendAll(context.Background(), recs, true) {
		if err != nil {
			m.log.Error("mirror outbound chunk", "outbox_id", recs[i].Meta[store.MetaOutboxID], "err", err)
		}
	}
	for i, e := range es {
		m.feed(e, recs[i])
	}
}

func (m *mirrorEvents) Dead(e *outbox.Entry) {
	m.append(e, m.record(e, store.KindDead, ""))
}

func (m *mirrorEvents) append(e *outbox.Entry, rec store.MirrorRecord) {
	if err := m.mirror.Append(context.Background(), rec, true); err != nil {
		m.log.Error("mirror outbound chunk", "outbox_id", rec.Meta[store.MetaOutboxID], "err", err)
	}
	m.feed(e, rec)
}

// feed gives the record of a chunk to the conversations feed.
func (m *mirrorEvents) feed(e *outbox.Entry, rec store.MirrorRecord) {
	if a := e.Attachment; a != nil && !a.Stored() {
		// A conversation shows an overflow attachment inline (a stored
		// file is a download: its record names it).
		rec.Text += "\n" + executor.Fence(string(a.Data), "")
	}
	m.conv.record(rec)
}

// bothEvents tells two listeners every outbox event, the first one first
// (the mirror, so its record is written before anyone counts it).
type bothEvents [2]outbox.Events

func (b bothEvents) Delivered(e *outbox.Entry, r outbox.Receipt) {
	b[0].Delivered(e, r)
	b[1].Delivered(e, r)
}

// DeliveredBatch tells the first listener of the whole batch, then the
// second (outbox.NotifyDelivered: one Delivered each if it cannot hear of a
// batch).
func (b bothEvents) DeliveredBatch(es []*outbox.Entry, rs []outbox.Receipt) {
	outbox.NotifyDelivered(b[0], es, rs)
	outbox.NotifyDelivered(b[1], es, rs)
}

func (b bothEvents) Dead(e *outbox.Entry) {
	b[0].Dead(e)
	b[1].Dead(e)
}

func (b bothEvents) Retrying(e *outbox.Entry, err error, next time.Time) {
	b[0].Retrying(e, err, next)
	b[1].Retrying(e, err, next)
}
