package discord

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/internal/serial"
	"github.com/a6afc2ce/hermes-hub/outbox"
	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"
)

// Name is the adapter's and the platform's name.
const Name = "discord"

// DefaultConcurrency bounds the turns an adapter runs at once.
const DefaultConcurrency = 16

// deferBudget is how long the deferral may take: Discord's window is 3 s
// from the interaction's creation.
const deferBudget = 2500 * time.Millisecond

// recentEvents is how many interaction and message ids the adapter
// remembers to drop a repeated gateway delivery before it costs anything.
const recentEvents = 4096

// Options configure an Adapter.
type Options struct {
	Config config.Discord
	// Intake is the hub the adapter hands its turns to. Required.
	Intake Intake
	// Status receives the adapter's state; nil reports nowhere.
	Status StatusReporter
	// Clock decides when an interaction token has expired; default real.
	Clock  clock.Clock
	Logger *slog.Logger
	// Concurrency bounds the turns run at once; default DefaultConcurrency.
	// Interactions are deferred before they wait for a slot.
	Concurrency int
}

// Adapter is the Discord connection: a gateway session that turns slash
// commands and addressed channel messages into hub turns, and the Sender of
// their replies.
type Adapter struct {
	cfg      config.Discord
	hub      Intake
	status   StatusReporter
	clock    clock.Clock
	log      *slog.Logger
	session  *discordgo.Session
	cmds     atomic.Pointer[commandSet] // replaced when the registry's named commands change
	apiBase  string
	sender   *Sender
	progress *progressView
	sem      chan struct{}
	recent   *recentSet
	secret   string       // the bot token, redacted from every error and log line
	files    *http.Client // fetches attachments from the CDN (files.go)

	appID   atomic.Value // string: the application id, from config or READY
	botID   atomic.Value // string: the bot user's id, from READY
	botName atomic.Value // string: the bot user's name, from READY

	mu       sync.Mutex
	running  bool
	stopping bool
	runCtx   context.Context
	wg       sync.WaitGroup
	lanes    serial.Lanes // per channel: its message turns, in order
}

var _ hub.Adapter = (*Adapter)(nil)

// Intake is the hub as the Discord adapter uses it.
type Intake interface {
	// Accept records a turn before it is acknowledged (Discord never
	// delivers an event again); Abandon forgets one that was not.
	Accept(ctx context.Context, in *chat.Inbound) error
	Abandon(turnID string) error
	// Handle runs a turn.
	Handle(ctx context.Context, in *chat.Inbound) (*hub.TurnResult, error)
	// Preview says, before the deferral fixes it, whether the answer is
	// private (ephemeral).
	Preview(in *chat.Inbound) hub.Preview
	// Registry is where the slash commands come from.
	Registry() *executor.Registry
	// Cancel stops running calls (the Cancel button of a progress message).
	Cancel(req hub.CancelRequest) hub.CancelResult
	// Confirm decides a press on a held call's Run, Cancel, Approve or
	// Reject button.
	Confirm(ctx context.Context, p hub.ConfirmPress) (hub.ConfirmResult, error)
}

// StatusReporter receives the adapter's state for the status page.
type StatusReporter interface {
	Report(state hub.State, detail string)
}

// New builds the adapter and its session without touching the network. It
// derives the slash commands from the hub's registry (an error here means a
// verb cannot be expressed as a Discord command) and, when the configured
// API base is not the one discordgo points at, calls SetBaseURL.
func New(opts Options) (*Adapter, error) {
	if opts.Intake == nil {
		return nil, errors.New("discord: Options.Intake is required")
	}
	token := strings.TrimSpace(opts.Config.Token.Reveal())
	if token == "" {
		return nil, errors.New("discord: the bot token is empty: set discord.token, e.g. token: ${DISCORD_BOT_TOKEN}")
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = DefaultConcurrency
	}
	cmds, err := buildCommands(opts.Intake.Registry())
	if err != nil {
		return nil, err
	}
	base := strings.TrimRight(strings.TrimSpace(opts.Config.APIBase), "/")
	if base == "" {
		base = DefaultAPIBase
	}
	if base != currentAPIBase() {
		SetBaseURL(base)
	}
	token = strings.TrimPrefix(token, "Bot ")
	routeLibraryLogs(opts.Logger, token)
	s, err := discordgo.New("Bot " + token)
	if err != nil {
		return nil, fmt.Errorf("discord: new session: %w", err)
	}
	s.SyncEvents = true // handlers only hand work off; they never block
	s.ShouldRetryOnRateLimit = false
	s.MaxRestRetries = 0
	s.LogLevel = discordgo.LogWarning
	s.Client = &http.Client{Timeout: 30 * time.Second}
	s.Identify.Intents = Intents(opts.Config)
	s.State.TrackEmojis, s.State.TrackStickers, s.State.TrackMembers = false, false, false
	s.State.TrackThreadMembers, s.State.TrackRoles, s.State.TrackVoice, s.State.TrackPresences = false, false, false, false

	a := &Adapter{
		cfg: opts.Config, hub: opts.Intake, status: opts.Status, clock: opts.Clock,
		log: opts.Logger.With("adapter", Name), session: s, apiBase: base,
		sem: make(chan struct{}, opts.Concurrency), recent: newRecentSet(recentEvents), secret: token,
		files: newFileClient(),
	}
	a.cmds.Store(cmds)
	a.appID.Store(strings.TrimSpace(opts.Config.ApplicationID))
	a.botID.Store("")
	a.sender = &Sender{a: a}
	a.progress = newProgressView(a)
	s.AddHandler(a.onReady)
	s.AddHandler(a.onConnect)
	s.AddHandler(a.onDisconnect)
	s.AddHandler(a.onResumed)
	s.AddHandler(a.onInteraction)
	s.AddHandler(a.onMessage)
	return a, nil
}

// Intents are the gateway intents the configuration needs: guilds, guild
// messages and direct messages, and message content when a mention or
// prefix trigger is on.
func Intents(cfg config.Discord) discordgo.Intent {
	i := discordgo.IntentsGuilds | discordgo.IntentsGuildMessages | discordgo.IntentsDirectMessages
	if cfg.Prefix != "" || cfg.Mention == nil || *cfg.Mention {
		i |= discordgo.IntentsMessageContent
	}
	return i
}

// Name returns "discord".
func (a *Adapter) Name() string { return Name }

// Sender returns the outbox.Sender of "chat:discord" targets.
func (a *Adapter) Sender() outbox.Sender { return a.sender }

// Platform is the adapter as the runtime attaches it (hub.Runtime.Attach):
// itself, its Sender and its progress view.
func (a *Adapter) Platform() hub.Platform {
	return hub.Platform{Name: chat.Discord, Adapter: a, Sender: a.sender, Progress: a.progress, Files: a}
}

func (a *Adapter) applicationID() string { s, _ := a.appID.Load().(string); return s }
func (a *Adapter) botUserID() string     { s, _ := a.botID.Load().(string); return s }

// Run opens the gateway session (discordgo reconnects and resumes on its
// own; the state is reported on the runtime's board), registers the slash
// commands by bulk overwrite, and handles events until ctx is done. Then it
// closes the session and waits for the turns in flight, whose context ends
// with ctx. A configuration Discord refuses for good (bad token, intents not
// enabled for the application) is returned as an error.
func (a *Adapter) Run(ctx context.Context) error {
	a.mu.Lock()
	if a.running {
		a.mu.Unlock()
		return errors.New("discord: Run called twice")
	}
	runCtx, cancel := context.WithCancel(ctx)
	a.running, a.stopping, a.runCtx = true, false, runCtx
	a.mu.Unlock()
	defer cancel()
	defer func() {
		a.mu.Lock()
		a.running = false
		a.mu.Unlock()
	}()

	a.board(hub.StateStarting, "connecting to the gateway")
	for attempt := 1; ; attempt++ {
		err := a.session.Open()
		if err == nil {
			break
		}
		if errors.Is(err, discordgo.ErrWSAlreadyOpen) {
			break
		}
		if fatal := fatalClose(err); fatal != "" {
			a.stop(cancel)
			a.board(hub.StateStopped, fatal)
			return fmt.Errorf("discord gateway: %s: %w", fatal, err)
		}
		delay := gatewayBackoff.Delay(attempt)
		a.board(hub.StateDegraded, "gateway: "+err.Error())
		a.log.Warn("gateway connection failed; retrying", "err", err, "in", delay)
		if !clock.Sleep(ctx, a.clock, delay) {
			a.stop(cancel)
			return nil
		}
	}
	if err := a.RegisterCommands(ctx); err != nil {
		a.log.Error("slash commands not registered", "err", err)
		a.board(hub.StateDegraded, "slash commands not registered: "+err.Error())
	}
	stop := a.hub.Registry().Watch(func() { a.spawn(a.resyncCommands) })
	defer stop()
	<-ctx.Done()
	a.stop(cancel)
	return nil
}

// stop ends intake, closes the session and waits for the turns in flight.
func (a *Adapter) stop(cancel context.CancelFunc) {
	a.mu.Lock()
	a.stopping = true
	a.mu.Unlock()
	cancel()
	a.session.Lock()
	a.session.ShouldReconnectOnError = false
	a.session.Unlock()
	if err := a.session.Close(); err != nil {
		a.log.Warn("close gateway session", "err", err)
	}
	a.wg.Wait()
	a.lanes.Wait()
	a.board(hub.StateStopped, "")
}

// fatalClose names a gateway close code that retrying cannot fix, or "".
func fatalClose(err error) string {
	var ce *websocket.CloseError
	if !errors.As(err, &ce) {
		return ""
	}
	switch ce.Code {
	case 4004:
		return "authentication failed: check discord.token"
	case 4010, 4011:
		return "sharding is required for this bot, which the hub does not do"
	case 4012:
		return "invalid gateway API version"
	case 4013:
		return "invalid gateway intents"
	case 4014:
		return "disallowed gateway intents: enable the Message Content intent for the application in the developer portal, or turn off discord.mention and discord.prefix"
	}
	return ""
}

func (a *Adapter) board(state hub.State, detail string) {
	if a.status != nil {
		a.status.Report(state, detail)
	}
}

func (a *Adapter) isStopping() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.stopping
}

// spawn runs f in a goroutine that Run waits for, unless the adapter is
// stopping or not running.
func (a *Adapter) spawn(f func(ctx context.Context)) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stopping || !a.running {
		return false
	}
	ctx := a.runCtx
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		f(ctx)
	}()
	return true
}

// inOrder runs f after every earlier job of the same lane, in a goroutine
// that Run waits for: the messages of one channel are turns in the order
// they were sent.
func (a *Adapter) inOrder(lane string, f func(ctx context.Context)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stopping || !a.running {
		return
	}
	ctx := a.runCtx
	a.lanes.Add(lane, func() bool {
		f(ctx)
		return true
	})
}

// acquire takes a turn slot, or fails when ctx ends first.
func (a *Adapter) acquire(ctx context.Context) bool {
	select {
	case a.sem <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

func (a *Adapter) release() { <-a.sem }

func (a *Adapter) onReady(_ *discordgo.Session, r *discordgo.Ready) {
	if r.User != nil {
		a.botID.Store(r.User.ID)
	}
	if r.Application != nil && r.Application.ID != "" && a.applicationID() == "" {
		a.appID.Store(r.Application.ID)
	}
	if r.User != nil {
		a.botName.Store(r.User.Username)
	}
}

func (a *Adapter) onConnect(s *discordgo.Session, _ *discordgo.Connect) {
	if a.isStopping() {
		// discordgo reconnected while the adapter was closing: close again.
		// Open holds the session's lock while it emits this event.
		go func() { _ = s.Close() }()
		return
	}
	name, _ := a.botName.Load().(string)
	a.board(hub.StateRunning, "connected as "+name)
}

func (a *Adapter) onDisconnect(_ *discordgo.Session, _ *discordgo.Disconnect) {
	if !a.isStopping() {
		a.board(hub.StateDegraded, "gateway connection lost; reconnecting")
	}
}

func (a *Adapter) onResumed(_ *discordgo.Session, _ *discordgo.Resumed) {
	a.board(hub.StateRunning, "resumed")
}

// RegisterCommands replaces the application's slash commands with the
// derived ones by bulk overwrite: in each configured command guild (which
// takes effect at once) or, with none, globally.
func (a *Adapter) RegisterCommands(ctx context.Context) error {
	app := a.applicationID()
	if app == "" {
		return errors.New("the application id is unknown: set discord.application_id")
	}
	paths := []string{"/applications/" + app + "/commands"}
	if len(a.cfg.CommandGuilds) > 0 {
		paths = paths[:0]
		for _, g := range a.cfg.CommandGuilds {
			paths = append(paths, "/applications/"+app+"/guilds/"+g+"/commands")
		}
	}
	var errs []error
	for _, p := range paths {
		errs = append(errs, a.putCommands(ctx, p))
	}
	return errors.Join(errs...)
}

// resyncCommands derives the slash commands from the registry again (a
// reload changed its named commands) and registers them.
func (a *Adapter) resyncCommands(ctx context.Context) {
	cmds, err := buildCommands(a.hub.Registry())
	if err != nil {
		a.log.Error("slash commands not rebuilt after a change of the named commands", "err", err)
		return
	}
	a.cmds.Store(cmds)
	if err := a.RegisterCommands(ctx); err != nil && ctx.Err() == nil {
		a.log.Error("slash commands not re-registered", "err", err)
	}
}

// putCommands sends one bulk overwrite, waiting out a rate limit a few times.
func (a *Adapter) putCommands(ctx context.Context, path string) error {
	for attempt := 0; ; attempt++ {
		cmds := a.cmds.Load()
		_, err := a.call(ctx, request{Method: http.MethodPut, Path: path, Body: cmds.wire})
		var rl *rateLimited
		if err == nil || !errors.As(err, &rl) || attempt >= 3 {
			if err == nil {
				a.log.Info("slash commands registered", "path", path, "commands", len(cmds.cmds))
			}
			return err
		}
		if !clock.Sleep(ctx, a.clock, rl.After) {
			return ctx.Err()
		}
	}
}

// gatewayBackoff spaces attempts to connect to the gateway.
var gatewayBackoff = outbox.Backoff{Base: time.Second, Max: time.Minute}

// allowedPlace applies discord.allowed_guilds (to guild messages; direct
// messages have no guild) and discord.allowed_channels (to everything; a
// thread counts as its parent channel).
func (a *Adapter) allowedPlace(guildID, channelID string) bool {
	if guildID != "" && len(a.cfg.AllowedGuilds) > 0 && !slices.Contains(a.cfg.AllowedGuilds, guildID) {
		return false
	}
	if len(a.cfg.AllowedChannels) == 0 || slices.Contains(a.cfg.AllowedChannels, channelID) {
		return true
	}
	if ch, err := a.session.State.Channel(channelID); err == nil && ch.IsThread() && ch.ParentID != "" {
		return slices.Contains(a.cfg.AllowedChannels, ch.ParentID)
	}
	return false
}

// title is "Guild / #channel" as far as the session's state knows them.
func (a *Adapter) title(guildID, channelID string) string {
	var parts []string
	if guildID != "" {
		if g, err := a.session.State.Guild(guildID); err == nil && g.Name != "" {
			parts = append(parts, g.Name)
		}
	}
	if ch, err := a.session.State.Channel(channelID); err == nil && ch.Name != "" {
		parts = append(parts, "#"+ch.Name)
	}
	return strings.Join(parts, " / ")
}

// recentSet remembers the last n ids.
type recentSet struct {
	mu   sync.Mutex
	set  map[string]struct{}
	ring []string
	next int
}

func newRecentSet(n int) *recentSet {
	return &recentSet{set: make(map[string]struct{}, n), ring: make([]string, n)}
}

// add records id and reports whether it was new.
func (r *recentSet) add(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.set[id]; ok {
		return false
	}
	if old := r.ring[r.next]; old != "" {
		delete(r.set, old)
	}
	r.ring[r.next] = id
	r.next = (r.next + 1) % len(r.ring)
	r.set[id] = struct{}{}
	return true
}

var (
	libLogOnce sync.Once
	libLog     atomic.Pointer[libLogTarget]
)

type libLogTarget struct {
	log    *slog.Logger
	secret string
}

// routeLibraryLogs sends discordgo's log lines (a package-level hook) to
// the most recent adapter's logger, with the bot token redacted.
func routeLibraryLogs(l *slog.Logger, token string) {
	libLog.Store(&libLogTarget{log: l, secret: token})
	libLogOnce.Do(func() {
		discordgo.Logger = func(msgL, _ int, format string, args ...any) {
			t := libLog.Load()
			if t == nil {
				return
			}
			msg := fmt.Sprintf(format, args...)
			if t.secret != "" {
				msg = strings.ReplaceAll(msg, t.secret, "[token]")
			}
			level := slog.LevelDebug
			switch msgL {
			case discordgo.LogError:
				level = slog.LevelError
			case discordgo.LogWarning:
				level = slog.LevelWarn
			case discordgo.LogInformational:
				level = slog.LevelInfo
			}
			t.log.Log(context.Background(), level, "discordgo: "+msg)
		}
	})
}
