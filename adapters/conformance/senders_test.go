// Package conformance_test runs one test of the outbox's contract against
// the sender of every platform (Telegram and Discord against their fakes,
// the web panel, local files), each attached to a real runtime as `hub
// serve` attaches it: chunks arrive in order, a platform's "retry after"
// reaches the outbox as its delay, a chunk sent again under its id shows
// once, a chunk the hub cut to the platform's limit is accepted, and a
// file reply shows whole as the platform's file.
package conformance_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/adapters/discord"
	"github.com/a6afc2ce/hermes-hub/adapters/discord/discordtest"
	"github.com/a6afc2ce/hermes-hub/adapters/telegram"
	"github.com/a6afc2ce/hermes-hub/adapters/telegram/telegramtest"
	"github.com/a6afc2ce/hermes-hub/adapters/web"
	"github.com/a6afc2ce/hermes-hub/admin"
	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/hub/hubtest"
	"github.com/a6afc2ce/hermes-hub/internal/testkit"
	"github.com/a6afc2ce/hermes-hub/outbox"
)

// platform is one row of the conformance table: how to attach a platform's
// sender to a runtime and read back what the platform shows.
type platform struct {
	name  string
	chunk chat.Platform // whose chunk options the hub cuts its replies with
	open  func(t *testing.T, rt *hub.Runtime) *target
	// throttles says the platform answers with "retry after": the target
	// has throttle.
	throttles bool
	// resendOnce says a chunk the sender sends again under the same id
	// (its answer lost to a crash, the dispatcher tries again) shows once.
	// Telegram's Bot API has no idempotency key, so such a resend shows
	// twice there (docs/outbox.md, "Restarts").
	resendOnce bool
	// recorded says the delivery is the hub's own record (an
	// outbox.RecordedSender, the web panel): nothing leaves the hub to be
	// sent again, and the panel shows each chunk once by its outbox id.
	recorded bool
}

// target is an attached platform's delivery target.
type target struct {
	key    chat.Key
	sender outbox.Sender
	// shown returns the texts the platform shows for key, in order.
	shown func() []string
	// throttle makes the platform answer the next send with "retry
	// after" and returns the delay it asks for.
	throttle func() time.Duration
	// file returns the bytes of the last file named name the platform
	// shows for key (a document, an attachment, a download, a file beside
	// the JSONL); nil when none.
	file func(name string) []byte
}

var platforms = []platform{
	{name: "telegram", chunk: chat.Telegram, open: openTelegram, throttles: true},
	{name: "discord", chunk: chat.Discord, open: openDiscord, throttles: true, resendOnce: true},
	{name: "web", chunk: chat.Web, open: openWeb, recorded: true},
	{name: "local", chunk: chat.Web, open: openLocal, resendOnce: true},
}

func openTelegram(t *testing.T, rt *hub.Runtime) *target {
	f := telegramtest.NewServer()
	t.Cleanup(f.Close)
	// No proactive pacing: Telegram's own rate limit is what the test plays.
	cfg := config.Telegram{Enabled: true, Token: config.NewSecret(f.Token()), APIEndpoint: f.URL(), Mode: telegram.ModePolling}
	ad, err := telegram.New(telegram.Options{Config: cfg, Intake: rt.Hub, Logger: testkit.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	attach(t, rt, ad.Platform())
	const chatID = "-1001234"
	return &target{
		key: chat.ChatKey(chat.Telegram, chatID, ""), sender: ad.Sender(),
		shown: func() []string {
			var out []string
			for _, m := range f.MessagesTo(chatID) {
				out = append(out, m.Text)
			}
			return out
		},
		throttle: func() time.Duration {
			f.Inject("sendMessage", telegramtest.TooManyRequests(1))
			return time.Second
		},
		file: func(name string) []byte {
			var doc []byte
			for _, m := range f.MessagesTo(chatID) {
				if m.Method == "sendDocument" && m.DocName == name {
					doc = m.Doc
				}
			}
			return doc
		},
	}
}

func openDiscord(t *testing.T, rt *hub.Runtime) *target {
	f := discordtest.NewServer()
	t.Cleanup(f.Close)
	cfg := config.Discord{Enabled: true, Token: config.NewSecret(discordtest.DefaultToken), ApplicationID: f.AppID, APIBase: f.APIBase()}
	ad, err := discord.New(discord.Options{Config: cfg, Intake: rt.Hub, Logger: testkit.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	attach(t, rt, ad.Platform())
	return &target{
		key: chat.ChatKey(chat.Discord, f.ChannelID, ""), sender: ad.Sender(),
		shown: func() []string {
			var out []string
			for _, m := range f.ChannelMessages(f.ChannelID) {
				out = append(out, m.Content)
			}
			return out
		},
		throttle: func() time.Duration {
			f.FailNext(discordtest.RateLimit("POST", "/channels/", 0.5))
			return 500 * time.Millisecond
		},
		file: func(name string) []byte {
			var data []byte
			for _, m := range f.ChannelMessages(f.ChannelID) {
				if d, ok := m.Files[name]; ok {
					data = d
				}
			}
			return data
		},
	}
}

func openWeb(t *testing.T, rt *hub.Runtime) *target {
	srv, err := web.New(web.Options{
		Intake: rt.Hub, Conversation: rt.Conversations.For(chat.Web), Admin: admin.ForRuntime(rt),
		Status: rt.Board.Reporter("web"), Config: rt.Config.Web, Logger: testkit.Discard(),
		Files: rt.Hub,
	})
	if err != nil {
		t.Fatal(err)
	}
	attach(t, rt, srv.Platform())
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	get := func(path string) []byte {
		req, _ := http.NewRequest(http.MethodGet, ts.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+srv.Token())
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %v: %s", path, resp.StatusCode, err, body)
		}
		return body
	}
	history := func() []web.Event {
		var h web.HistoryResponse
		if err := json.Unmarshal(get("/api/history"), &h); err != nil {
			t.Fatal(err)
		}
		return h.Events
	}
	return &target{
		key: chat.WebKey, sender: srv.Sender(),
		shown: func() []string {
			var out []string
			for _, ev := range history() {
				if ev.OutboxID != "" {
					out = append(out, ev.Text)
				}
			}
			return out
		},
		file: func(name string) []byte {
			var link *web.FileLink
			for _, ev := range history() {
				if ev.File != nil && ev.File.Name == name {
					link = ev.File
				}
			}
			if link == nil {
				return nil
			}
			return get(link.URL)
		},
	}
}

// openLocal is the runtime's own sender of local files: nothing to attach.
func openLocal(t *testing.T, rt *hub.Runtime) *target {
	k := chat.LocalKey("pma/conformance.jsonl")
	s, ok := rt.Mux.Sender(k.String())
	if !ok {
		t.Fatal("no sender of local targets")
	}
	path := filepath.Join(rt.State.Dir(), "pma", "conformance.jsonl")
	return &target{
		key: k, sender: s,
		shown: func() []string {
			data, err := os.ReadFile(path)
			if os.IsNotExist(err) {
				return nil
			} else if err != nil {
				t.Fatal(err)
			}
			// A line is shown once it is whole: the sender may be
			// writing the last one.
			var out []string
			for _, b := range bytes.SplitAfter(data, []byte("\n")) {
				if !bytes.HasSuffix(b, []byte("\n")) {
					break
				}
				var line struct{ Text string }
				if err := json.Unmarshal(b, &line); err != nil {
					t.Fatalf("line %d of %s: %v", len(out)+1, path, err)
				}
				out = append(out, line.Text)
			}
			return out
		},
		file: func(name string) []byte {
			data, _ := os.ReadFile(path)
			var file []byte
			for _, b := range bytes.Split(data, []byte("\n")) {
				var line struct{ Attachment, File string }
				if json.Unmarshal(b, &line) == nil && line.Attachment == name && line.File != "" {
					file, _ = os.ReadFile(filepath.Join(filepath.Dir(path), filepath.FromSlash(line.File)))
				}
			}
			return file
		},
	}
}

func attach(t *testing.T, rt *hub.Runtime, p hub.Platform) {
	t.Helper()
	if err := rt.Attach(p); err != nil {
		t.Fatal(err)
	}
}

// events hears the outbox's retries and dead letters.
type events struct {
	outbox.NopEvents
	mu       sync.Mutex
	retrying []error
	dead     []string
}

func (e *events) Retrying(_ *outbox.Entry, err error, _ time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.retrying = append(e.retrying, err)
}

func (e *events) Dead(en *outbox.Entry) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.dead = append(e.dead, en.ID+": "+en.LastError)
}

func (e *events) snapshot() (retrying []error, dead []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.retrying), slices.Clone(e.dead)
}

// env is one platform attached to a started runtime.
type env struct {
	*target
	rt  *hub.Runtime
	ev  *events
	seq int
}

func open(t *testing.T, p platform) *env {
	ev := &events{}
	he := hubtest.Open(t, hubtest.Config(t, "", ""), hubtest.Options{Runtime: hub.RuntimeOptions{OutboxEvents: ev, Logger: testkit.Discard()}})
	tg := p.open(t, he.Runtime)
	he.Start(t)
	return &env{target: tg, rt: he.Runtime, ev: ev}
}

// entries are the chunks of a new turn for the target, as the hub makes
// them.
func (e *env) entries(chunks ...string) []outbox.Entry {
	e.seq++
	return outbox.NewEntries(outbox.KindReply, fmt.Sprintf("conformance.%d", e.seq), e.key, chat.Split{Chunks: chunks}, nil)
}

func (e *env) enqueue(t *testing.T, es []outbox.Entry) []string {
	t.Helper()
	added, err := e.rt.Outbox.Enqueue(context.Background(), es)
	if err != nil {
		t.Fatal(err)
	}
	return added
}

// waitShown waits until the platform shows n texts for the target.
func (e *env) waitShown(t *testing.T, n int) []string {
	t.Helper()
	var got []string
	testkit.WaitFor(t, fmt.Sprintf("%d chunks shown on %s", n, e.key), func() bool {
		got = e.shown()
		return len(got) >= n
	})
	return got
}

func texts(es []outbox.Entry) []string {
	var out []string
	for _, en := range es {
		out = append(out, en.Text)
	}
	return out
}

func TestSenderConformance(t *testing.T) {
	for _, p := range platforms {
		t.Run(p.name, func(t *testing.T) {
			t.Run("order", func(t *testing.T) { testOrder(t, p) })
			t.Run("retry after", func(t *testing.T) { testRetryAfter(t, p) })
			t.Run("dedupe by id", func(t *testing.T) { testDedupe(t, p) })
			t.Run("chunk limit", func(t *testing.T) { testChunkLimit(t, p) })
			t.Run("stored file", func(t *testing.T) { testStoredFile(t, p) })
		})
	}
}

// testOrder: the chunks of several turns show in the order enqueued.
func testOrder(t *testing.T, p platform) {
	e := open(t, p)
	var want []string
	for turn := range 3 {
		es := e.entries(fmt.Sprintf("turn %d, first", turn), fmt.Sprintf("turn %d, second", turn), fmt.Sprintf("turn %d, third", turn))
		e.enqueue(t, es)
		want = append(want, texts(es)...)
	}
	if got := e.waitShown(t, len(want)); !slices.Equal(got, want) {
		t.Fatalf("shown %q, want %q", got, want)
	}
}

// testRetryAfter: a platform's "retry after" reaches the outbox as that
// delay, and the chunk then shows once. A platform without rate limits
// never asks to wait, even for a burst.
func testRetryAfter(t *testing.T, p platform) {
	e := open(t, p)
	if !p.throttles {
		var want []string
		for range 10 {
			es := e.entries("a", "b", "c", "d", "e")
			e.enqueue(t, es)
			want = append(want, texts(es)...)
		}
		if got := e.waitShown(t, len(want)); !slices.Equal(got, want) {
			t.Fatalf("shown %d chunks, want %d in order", len(got), len(want))
		}
		if retrying, _ := e.ev.snapshot(); len(retrying) > 0 {
			t.Fatalf("a platform without rate limits asked to retry: %v", retrying)
		}
		return
	}
	delay := e.throttle()
	es := e.entries("after the limit")
	e.enqueue(t, es)
	if got := e.waitShown(t, 1); !slices.Equal(got, texts(es)) {
		t.Fatalf("shown %q, want %q once", got, texts(es))
	}
	retrying, dead := e.ev.snapshot()
	if len(retrying) == 0 || len(dead) > 0 {
		t.Fatalf("retries %v, dead letters %v; want a retry after the platform's delay, no dead letter", retrying, dead)
	}
	if d, ok := outbox.RetryAfterOf(retrying[0]); !ok || d != delay {
		t.Fatalf("first retry: %v (retry after %v, %v); want retry after exactly %v", retrying[0], d, ok, delay)
	}
}

// testDedupe: a chunk enqueued again under its id shows once; so does one
// the sender sends again (its answer lost) where the platform can tell.
func testDedupe(t *testing.T, p platform) {
	e := open(t, p)
	es := e.entries("one", "two", "three")
	e.enqueue(t, es)
	e.waitShown(t, len(es))
	if added := e.enqueue(t, slices.Clone(es)); len(added) != 0 {
		t.Fatalf("a repeated enqueue added %v", added)
	}
	_, isRecorded := e.sender.(outbox.RecordedSender)
	if isRecorded != p.recorded {
		t.Fatalf("the sender is an outbox.RecordedSender: %v, want %v", isRecorded, p.recorded)
	}
	if p.resendOnce {
		// The chunk whose answer a crash loses is the last one sent to
		// the target: the next is sent only once it is marked.
		again := es[len(es)-1]
		if _, err := e.sender.Send(context.Background(), &again); err != nil {
			t.Fatalf("sending %s again: %v", again.ID, err)
		}
	}
	// The target's chunks go in order: once the marker shows, a repeat
	// would have shown before it.
	marker := e.entries("marker")
	e.enqueue(t, marker)
	want := append(texts(es), "marker")
	if got := e.waitShown(t, len(want)); !slices.Equal(got, want) {
		t.Fatalf("shown %q, want %q: each chunk once", got, want)
	}
}

// testChunkLimit: the chunks the hub cuts a long reply into for the
// platform (its markup escaped or expanded by the sender's formatting) are
// each accepted whole; where the platform has no limit, a long chunk shows
// whole.
func testChunkLimit(t *testing.T, p platform) {
	e := open(t, p)
	opts := chat.ChunkOptionsFor(p.chunk)
	if opts.MaxUnits <= 0 {
		long := strings.Repeat("a long line of output, and < & > as they are\n", 3000)
		es := e.entries(long)
		e.enqueue(t, es)
		if got := e.waitShown(t, 1); len(got) != 1 || got[0] != long {
			t.Fatalf("a chunk of %d units did not show whole", chat.UTF16Len(long))
		}
		return
	}
	// Markup the senders rewrite: HTML-escaped characters, bold, inline
	// code, and a code block holding backtick runs (which the Discord
	// sender breaks up with zero-width spaces).
	var b strings.Builder
	for i := 0; b.Len() < opts.MaxUnits*3/2; i++ {
		fmt.Fprintf(&b, "line %d: a < b && c > d, **bold** and `code` — ünïcödé 😀\n", i)
	}
	b.WriteString("````\n")
	for i := 0; b.Len() < opts.MaxUnits*3; i++ {
		fmt.Fprintf(&b, "%d ``` x ``` <y> ```` z\n", i)
	}
	b.WriteString("````\n")
	split := chat.SplitText(b.String(), opts)
	if split.Attachment != nil || len(split.Chunks) < 2 {
		t.Fatalf("the reply split into %d chunks (attachment %v); want several, none overflowing", len(split.Chunks), split.Attachment != nil)
	}
	longest := 0
	for _, c := range split.Chunks {
		longest = max(longest, chat.UTF16Len(c))
	}
	if longest < opts.MaxUnits*9/10 {
		t.Fatalf("the longest chunk has %d units, not near the limit of %d", longest, opts.MaxUnits)
	}
	es := e.entries(split.Chunks...)
	e.enqueue(t, es)
	e.waitSettled(t, es)
	if _, dead := e.ev.snapshot(); len(dead) > 0 {
		t.Fatalf("chunks cut to the limit were refused: %v", dead)
	}
	if got := e.shown(); len(got) != len(es) {
		t.Fatalf("%d messages shown for %d chunks", len(got), len(es))
	}
}

// testStoredFile: a file reply (its bytes in the state's files/, the entry
// holding only their SHA-256) shows after its text, whole, as the
// platform's file.
func testStoredFile(t *testing.T, p platform) {
	e := open(t, p)
	data := bytes.Repeat([]byte{0, 0xff, '<', '\n', 'x'}, 3000)
	sha, size, err := e.rt.State.Files().Put(context.Background(), bytes.NewReader(data), 0)
	if err != nil {
		t.Fatal(err)
	}
	e.seq++
	es := outbox.NewEntries(outbox.KindReply, fmt.Sprintf("conformance.%d", e.seq), e.key, chat.Split{Chunks: []string{"app.bin is sent as a file."}}, nil,
		chat.Attachment{Name: "app.bin", MIME: "application/octet-stream", SHA256: sha, Size: size})
	e.enqueue(t, es)
	e.waitSettled(t, es)
	if _, dead := e.ev.snapshot(); len(dead) > 0 {
		t.Fatalf("dead letters: %v", dead)
	}
	if got := e.file("app.bin"); !bytes.Equal(got, data) {
		t.Fatalf("the platform shows %d bytes of app.bin, want the %d stored", len(got), len(data))
	}
	if got := e.shown(); len(got) < 1 || got[0] != "app.bin is sent as a file." {
		t.Fatalf("shown %q: the text first", got)
	}
}

// waitSettled waits until every entry is delivered or a dead letter.
func (e *env) waitSettled(t *testing.T, es []outbox.Entry) {
	t.Helper()
	testkit.WaitFor(t, fmt.Sprintf("%d chunks delivered or dead", len(es)), func() bool {
		for _, en := range es {
			got, err := e.rt.Outbox.Store().Get(context.Background(), en.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.State == outbox.StatePending {
				return false
			}
		}
		return true
	})
}
