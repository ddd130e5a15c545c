package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/outbox"
)

// Options wire an Adapter.
type Options struct {
	Config config.Telegram
	// PublicURL is web.public_url: Telegram posts webhook updates to
	// PublicURL + Config.Webhook.Path.
	PublicURL string
	// Intake is the hub the adapter feeds. Run needs it; without it the
	// adapter is only a Sender.
	Intake Intake
	// Cursors keeps the getUpdates offset and the group migration map
	// durably; nil keeps them in memory.
	Cursors Cursors
	// Status receives the adapter's state; nil reports nowhere.
	Status StatusReporter
	// Mount mounts the webhook endpoint on the web listener; required in
	// webhook mode.
	Mount func(pattern string, h http.Handler)
	// HTTPClient calls the Bot API; nil means a client with dial, TLS and
	// overall timeouts sized for the long poll.
	HTTPClient *http.Client
	// Clock drives backoff, pacing and the typing indicator.
	Clock  clock.Clock
	Logger *slog.Logger
}

// Modes of receiving updates.
const (
	ModePolling = "polling"
	ModeWebhook = "webhook"
)

// Timings of the adapter.
const (
	// typingAfter is how long a turn runs before the chat sees "typing…";
	// typingEvery renews it (Telegram shows it for about five seconds).
	typingAfter = time.Second
	typingEvery = 4 * time.Second
	// shutdownGrace is how long turns already running may finish after the
	// adapter is told to stop; then their context is cancelled.
	shutdownGrace = 10 * time.Second
	// callTimeout bounds the calls that are not sends or long polls.
	callTimeout = 15 * time.Second
)

// retryBackoff spaces retries of getMe, setWebhook, getUpdates and turns the
// hub could not record.
var retryBackoff = outbox.Backoff{Base: time.Second, Max: 30 * time.Second}

// Adapter is the Telegram platform connection: a hub.Adapter (Run) and the
// outbox.Sender of chat:telegram targets (Sender).
type Adapter struct {
	cfg      config.Telegram
	opts     Options
	api      *botAPI
	hub      Intake
	cursors  Cursors
	clk      clock.Clock
	log      *slog.Logger
	lim      *limiter
	mig      *migrations
	send     *Sender
	progress *progressView
	mode     string
	hookURL  string
	secret   string

	norm   atomic.Pointer[normalizer] // set once getMe has answered
	recent *recentIDs                 // webhook update ids already handled
	typers atomic.Int64               // typing indicators running

	// The webhook handler serves while Run is in webhook mode.
	mu       sync.Mutex
	turnCtx  context.Context // nil while not serving
	inflight sync.WaitGroup
}

var _ hub.Adapter = (*Adapter)(nil)

// Intake is the hub as the Telegram adapter uses it.
type Intake interface {
	// Handle runs a turn; the update is confirmed only after it returns.
	Handle(ctx context.Context, in *chat.Inbound) (*hub.TurnResult, error)
	// RenameChannel moves a migrated group's channel-directory entries.
	RenameChannel(from, to chat.ChannelKey)
	// VerbsFor lists the verbs the identities may run (the command menu).
	VerbsFor(ids []string) []executor.Info
	// Registry is the hub's registry, watched for changes of its named
	// commands (the menu is set again).
	Registry() *executor.Registry
	// Cancel stops running calls (the Cancel button of a progress message).
	Cancel(req hub.CancelRequest) hub.CancelResult
	// Confirm decides a press on a held call's Run, Cancel, Approve or
	// Reject button.
	Confirm(ctx context.Context, p hub.ConfirmPress) (hub.ConfirmResult, error)
}

// Cursors is the adapter's own durable store of named positions.
type Cursors interface {
	Cursor(name string) (string, error)
	SetCursor(name, value string) error
}

// StatusReporter receives the adapter's state for the status page.
type StatusReporter interface {
	Report(state hub.State, detail string)
}

// New builds the adapter from its configuration. It does not touch the
// network; in webhook mode it mounts the webhook endpoint.
func New(opts Options) (*Adapter, error) {
	cfg := opts.Config
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	mode := cfg.Mode
	if mode == "" {
		mode = ModePolling
	}
	if mode != ModePolling && mode != ModeWebhook {
		return nil, fmt.Errorf("telegram: mode %q is not polling or webhook", cfg.Mode)
	}
	if cfg.PollTimeout.D() < 0 || cfg.PollTimeout.D() > 50*time.Second {
		return nil, fmt.Errorf("telegram: poll_timeout %s is out of range (0s to 50s)", cfg.PollTimeout)
	}
	endpoint := cfg.APIEndpoint
	if endpoint == "" {
		return nil, errors.New("telegram: api_endpoint is empty (config.Load sets the official Bot API address by default)")
	}
	client := opts.HTTPClient
	if client == nil {
		client = defaultClient(cfg.PollTimeout.D())
	}
	api, err := newBotAPI(cfg.Token.Reveal(), endpoint, client)
	if err != nil {
		return nil, err
	}
	a := &Adapter{
		cfg: cfg, opts: opts, api: api, hub: opts.Intake, cursors: opts.Cursors, clk: opts.Clock, log: opts.Logger.With("adapter", "telegram"),
		mode: mode, recent: newRecentIDs(4096),
	}
	a.lim = newLimiter(a.clk, Limits{
		PerChat: cfg.Rate.PerChat, PerChatBurst: cfg.Rate.PerChatBurst,
		PerGroupPerMinute: cfg.Rate.PerGroupPerMinute, GlobalPerSecond: cfg.Rate.GlobalPerSecond,
	})
	if a.cursors == nil {
		a.cursors = &memoryCursors{}
	}
	if a.mig, err = loadMigrations(a.cursors); err != nil {
		return nil, err
	}
	a.send = &Sender{a: a}
	a.progress = newProgressView(a)
	if mode == ModeWebhook {
		if err := a.prepareWebhook(); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// defaultClient is an http.Client whose overall timeout leaves room for
// the long poll.
func defaultClient(poll time.Duration) *http.Client {
	return &http.Client{
		Timeout: poll + 30*time.Second,
		Transport: &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			TLSHandshakeTimeout:   10 * time.Second,
			ExpectContinueTimeout: time.Second,
			IdleConnTimeout:       90 * time.Second,
			MaxIdleConnsPerHost:   64,
			ForceAttemptHTTP2:     true,
		},
	}
}

// Name returns "telegram".
func (a *Adapter) Name() string { return string(chat.Telegram) }

// Sender returns the outbox.Sender of chat:telegram targets.
func (a *Adapter) Sender() outbox.Sender { return a.send }

// Platform is the adapter as the runtime attaches it (hub.Runtime.Attach,
// before Start): itself, its Sender and its progress view.
func (a *Adapter) Platform() hub.Platform {
	return hub.Platform{Name: chat.Telegram, Adapter: a, Sender: a.send, Progress: a.progress, Files: a}
}

// Run connects to the Bot API (getMe, retried with backoff while the API is
// down), sets the command menu, then receives updates until ctx is done:
// by long polling (after deleting any webhook) or through the webhook
// (after setWebhook). It returns nil when ctx ends, and an error only when
// the adapter cannot work at all (the token is refused).
func (a *Adapter) Run(ctx context.Context) error {
	if a.hub == nil {
		return errors.New("telegram: Run needs Options.Intake")
	}
	a.board(hub.StateStarting, "connecting to the Bot API")
	defer a.board(hub.StateStopped, "")
	me, err := a.connect(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	a.norm.Store(newNormalizer(me.Username))
	a.log.Info("telegram: connected", "bot", me.Username, "bot_id", me.ID, "mode", a.mode)
	a.setCommands(ctx)
	stop := a.hub.Registry().Watch(func() { a.setCommands(ctx) })
	defer stop()

	turnCtx, cancelTurns := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelTurns()
	if a.mode == ModeWebhook {
		return a.runWebhook(ctx, turnCtx, cancelTurns)
	}
	a.deleteWebhook(ctx)
	p := newPoller(a, me.ID)
	return p.run(ctx, turnCtx, cancelTurns)
}

// connect calls getMe until it answers. A refused token is final.
func (a *Adapter) connect(ctx context.Context) (botUser, error) {
	for attempt := 1; ; attempt++ {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		me, err := a.api.getMe(cctx)
		cancel()
		if err == nil {
			return me, nil
		}
		if ctx.Err() != nil {
			return botUser{}, ctx.Err()
		}
		var ae *APIError
		if errors.As(err, &ae) && (ae.Code == http.StatusUnauthorized || ae.Code == http.StatusNotFound) {
			a.board(hub.StateDegraded, "the Bot API refused the token")
			return botUser{}, fmt.Errorf("telegram: the Bot API refused the token (%d %s): check telegram.token and telegram.api_endpoint", ae.Code, ae.Description)
		}
		d := retryBackoff.Delay(attempt)
		a.board(hub.StateDegraded, "getMe failed: "+err.Error())
		a.log.Warn("telegram: Bot API unavailable; retrying", "err", err, "retry_in", d)
		if !clock.Sleep(ctx, a.clk, d) {
			return botUser{}, ctx.Err()
		}
	}
}

// setCommands publishes the command menu: the verbs a default role may run
// and the built-ins. A failure is only a warning.
func (a *Adapter) setCommands(ctx context.Context) {
	if a.cfg.SetCommands != nil && !*a.cfg.SetCommands {
		return
	}
	menu := CommandMenu(a.hub.VerbsFor(nil))
	data, err := json.Marshal(menu)
	if err != nil {
		a.log.Warn("telegram: could not build the command menu", "err", err)
		return
	}
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	if _, err := a.api.call(cctx, "setMyCommands", tgbotapi.Params{"commands": string(data)}); err != nil {
		a.log.Warn("telegram: could not set the command menu; commands still work when typed", "err", err)
		return
	}
	a.log.Info("telegram: command menu set", "commands", len(menu))
}

// deleteWebhook turns off a webhook a previous webhook-mode run left, so
// that getUpdates works. Pending updates are kept. A failure is logged;
// getUpdates then answers 409 and the poller tries again.
func (a *Adapter) deleteWebhook(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	if _, err := a.api.call(cctx, "deleteWebhook", tgbotapi.Params{"drop_pending_updates": "false"}); err != nil && ctx.Err() == nil {
		a.log.Warn("telegram: deleteWebhook failed", "err", err)
	}
}

// turn hands one message to the hub, with the typing indicator shown while
// it runs longer than typingAfter.
func (a *Adapter) turn(ctx context.Context, in *chat.Inbound) (*hub.TurnResult, error) {
	stop := a.startTyping(in.ChatID, in.ThreadID)
	defer stop()
	return a.hub.Handle(ctx, in)
}

// applyMigration records a group's migration from a service message or a
// send error, and moves its channel-directory entry.
func (a *Adapter) applyMigration(m migration) {
	news, err := a.mig.record(m.from, m.to)
	if err != nil {
		a.log.Error("telegram: record group migration", "err", err)
	}
	if !news {
		return
	}
	a.log.Info("telegram: group migrated to a supergroup", "from", m.from, "to", m.to)
	if a.hub != nil {
		a.hub.RenameChannel(
			chat.ChannelKey{Platform: chat.Telegram, ChatID: m.from},
			chat.ChannelKey{Platform: chat.Telegram, ChatID: m.to},
		)
	}
}

// board reports the adapter's state.
func (a *Adapter) board(state hub.State, detail string) {
	if a.opts.Status != nil {
		a.opts.Status.Report(state, detail)
	}
}

// webhookSecretOK checks Telegram's rule for secret_token: 1 to 256
// characters A-Z a-z 0-9 _ -.
func webhookSecretOK(s string) bool {
	if len(s) < 1 || len(s) > 256 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// prepareWebhook checks the webhook settings and mounts the endpoint.
func (a *Adapter) prepareWebhook() error {
	if a.opts.Mount == nil {
		return errors.New("telegram: webhook mode needs the web listener to mount its endpoint on")
	}
	a.secret = a.cfg.Webhook.SecretToken.Reveal()
	if !webhookSecretOK(a.secret) {
		return errors.New("telegram: webhook.secret_token must be 1-256 characters A-Z a-z 0-9 _ -")
	}
	path := a.cfg.Webhook.Path
	if path == "" {
		path = "/telegram/webhook"
	}
	if !strings.HasPrefix(path, "/") || strings.ContainsAny(path, " \t{}") {
		return fmt.Errorf("telegram: webhook.path %q must start with / and have no spaces or braces", path)
	}
	u, err := url.Parse(a.opts.PublicURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return fmt.Errorf("telegram: webhook mode needs web.public_url, the https address Telegram can reach (got %q)", a.opts.PublicURL)
	}
	a.hookURL = strings.TrimRight(a.opts.PublicURL, "/") + path
	a.opts.Mount(path, http.HandlerFunc(a.serveWebhook))
	return nil
}
