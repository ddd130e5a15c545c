package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/a6afc2ce/hermes-hub/adapters/discord/discordtest"
	"github.com/a6afc2ce/hermes-hub/adapters/telegram/telegramtest"
)

// command is an action as chat text (without the leading slash) and as a
// Discord slash command.
type command struct {
	text        string
	interaction string
	options     []discordtest.Option
	markerFile  string
	raw         bool // text is sent as it is (an envelope), not as a /command
}

// commandFor builds an action's command for a turn with marker m; chat is
// the chat's number, for the insert action's file.
func commandFor(action, m string, chat int) command {
	switch action {
	case "write":
		args := fmt.Sprintf(`-c "echo %s >> ran.log; echo %s"`, m, m)
		return command{text: "proc_run sh " + args, interaction: "proc",
			options: []discordtest.Option{discordtest.Sub("run", discordtest.Str("executable", "sh"), discordtest.Str("arguments", args))}, markerFile: "ran.log"}
	case "long":
		args := fmt.Sprintf(`-c "echo %s >> long.log; sleep 1.5; echo %s"`, m, m)
		return command{text: "proc_run sh " + args, interaction: "proc",
			options: []discordtest.Option{discordtest.Sub("run", discordtest.Str("executable", "sh"), discordtest.Str("arguments", args))}, markerFile: "long.log"}
	case "box", "box-long":
		sleep := 0
		if action == "box-long" {
			sleep = 120 // cut short by a docker stop step
		}
		env := fmt.Sprintf(`{"verb":"proc.run","arguments":{"executable":"sh","arguments":["-c","echo %s >> box.log; sleep %d; echo %s"]},"workspace":"box"}`, m, sleep, m)
		return command{text: env, markerFile: "box.log", raw: true}
	case "insert":
		file := insertFile(chat)
		return command{text: "fs_writerange " + file + " 1\n" + m, markerFile: file}
	case "exists":
		return command{text: "fs_exists " + m + ".txt", interaction: "fs",
			options: []discordtest.Option{discordtest.Sub("exists", discordtest.Str("path", m+".txt"))}}
	case "upload":
		// The text is the caption of the file the message carries (files.go).
		return command{text: uploadPath(m), raw: true}
	case "getfile":
		return command{text: "get " + blobName, interaction: "fs",
			options: []discordtest.Option{discordtest.Sub("send", discordtest.Str("path", blobName))}}
	case "big":
		return command{text: "fs_readfile big.txt", interaction: "fs",
			options: []discordtest.Option{discordtest.Sub("read-file", discordtest.Str("path", "big.txt"))}}
	default: // whoami
		return command{text: "whoami", interaction: "hub", options: []discordtest.Option{discordtest.Sub("whoami")}}
	}
}

func insertFile(chat int) string { return fmt.Sprintf("log-%d.txt", chat) }

// source sends the turns of one chat.
type source struct {
	w        *world
	t        TrafficStep
	chat     int    // the world's chat number
	tgChat   int64  // telegram chat id
	channel  string // discord channel id
	stranger bool
}

// runTraffic sends a traffic step's turns, its chats in parallel.
func (w *world) runTraffic(t TrafficStep) error {
	chats := max(t.Chats, 1)
	interval := durationOr(t.Interval, 100*time.Millisecond)
	var deadline time.Time
	if t.Duration > 0 {
		deadline = time.Now().Add(t.Duration.D())
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for range chats {
		s := w.newSource(t)
		wg.Go(func() {
			for i := 0; ; i++ {
				if t.Turns > 0 && i >= t.Turns || !deadline.IsZero() && time.Now().After(deadline) {
					return
				}
				if w.ctx.Err() != nil {
					return
				}
				action := t.Actions[i%len(t.Actions)]
				if t.Shuffle {
					action = t.Actions[w.randN(len(t.Actions))]
				}
				if err := s.send(action, false); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					return
				}
				if !sleepCtx(w.ctx, interval) {
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (w *world) newSource(t TrafficStep) *source {
	w.mu.Lock()
	w.chats++
	n := w.chats
	w.mu.Unlock()
	s := &source{w: w, t: t, chat: n, tgChat: int64(-2000 - n), stranger: t.Stranger}
	if t.Platform == "discord" {
		s.channel = w.dc.ChannelID
		if n > 1 {
			s.channel = strconv.FormatInt(950000000000000000+int64(n), 10)
		}
	}
	return s
}

// newTurn registers a turn before it is sent.
func (w *world) newTurn(t *Turn) *Turn {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seq++
	t.Seq = w.seq
	if t.Marker == "" {
		t.Marker = fmt.Sprintf("mk%06dz", t.Seq)
	}
	w.turns = append(w.turns, t)
	return t
}

// send sends one turn of action; probe marks the final turn.
func (s *source) send(action string, probe bool) error {
	w := s.w
	switch s.t.Platform {
	case "telegram":
		return s.sendTelegram(action, probe)
	case "discord":
		if s.t.Via == "message" {
			return s.sendDiscordMessage(action, probe)
		}
		return s.sendInteraction(action, probe)
	default:
		return w.sendWeb(action, probe, s.t.Duplicate)
	}
}

func (s *source) duplicate() bool {
	return s.t.Duplicate > 0 && s.w.randFloat() < s.t.Duplicate
}

func (s *source) sendTelegram(action string, probe bool) error {
	w := s.w
	user := int64(telegramUser)
	if s.stranger {
		user = telegramStranger
	}
	w.mu.Lock()
	w.msgIDs[s.tgChat]++
	msgID := w.msgIDs[s.tgChat]
	w.mu.Unlock()
	chat := strconv.FormatInt(s.tgChat, 10)
	t := w.newTurn(&Turn{Platform: "telegram", Source: "telegram:" + chat, Ordered: true, Target: "chat:telegram:" + chat,
		TurnID: "telegram." + chat + "." + strconv.Itoa(msgID), Action: action, Identity: "telegram:" + strconv.FormatInt(user, 10),
		Stranger: s.stranger, Probe: probe, Sent: time.Now()})
	cmd := commandFor(action, t.Marker, s.chat)
	if isRemote(action) {
		// Checked by checkNodes against the node's workspace.
		cmd = w.remoteCommand(action, t, s.t.Node)
	}
	if err := w.prepare(cmd); err != nil {
		return err
	}
	t.MarkerFile, t.Text = cmd.markerFile, "/"+cmd.text
	if cmd.raw {
		t.Text = cmd.text
	}
	dup := s.duplicate()
	// Telegram numbers updates in the order they arrive: the id is taken
	// and the update queued in one step, or a chat could queue a lower id
	// after another chat's higher one (which the hub, rightly, takes for a
	// repeat once it has moved past it).
	w.tgPush.Lock()
	defer w.tgPush.Unlock()
	id := telegramtest.NextUpdateID()
	w.mu.Lock()
	t.UpdateID = int64(id)
	t.Duplicated = dup
	w.byUpdate[int64(id)] = t
	w.byTurnID[t.TurnID] = t
	w.mu.Unlock()
	u := telegramtest.TextUpdate(id, s.tgChat, user, msgID, t.Text)
	if action == "upload" {
		u = w.telegramUpload(id, s.tgChat, user, msgID, t.Marker)
	}
	if dup {
		w.tg.Push(u, u) // the same update twice in one answer
		return nil
	}
	w.tg.Push(u)
	return nil
}

// prepare creates the file an insert writes into.
func (w *world) prepare(cmd command) error {
	if cmd.markerFile == "" || cmd.markerFile == "ran.log" || cmd.markerFile == "long.log" || cmd.markerFile == "box.log" {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.logFiles[cmd.markerFile] {
		return nil
	}
	w.logFiles[cmd.markerFile] = true
	return os.WriteFile(filepath.Join(w.ws, cmd.markerFile), []byte("start\n"), 0o644)
}

func (w *world) nextDiscordID() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.idSeq++
	return strconv.FormatInt(w.idSeq, 10)
}

// dispatch writes an event to the running hub's gateway connection,
// waiting for one (the hub restarting, Discord down) and trying again when
// the write fails. It sets t.Sent just before the write (when t is not
// nil) and reports whether the event was written.
func (w *world) dispatch(typ string, payload any, t *Turn) (bool, error) {
	ctx, cancel := context.WithTimeout(w.ctx, 2*time.Minute)
	defer cancel()
	for attempt := 0; attempt < 5; attempt++ {
		// The lab clears gatewayUp before it kills the hub: the fake may not
		// have noticed yet that the killed process's connection is gone.
		if err := w.until(ctx, "a hub connected to the Discord gateway", func() bool {
			return w.gatewayUp.Load() && w.dc.Connected()
		}); err != nil {
			if w.ctx.Err() != nil {
				return false, nil
			}
			return false, err
		}
		if t != nil {
			w.mu.Lock()
			t.Sent = time.Now()
			w.mu.Unlock()
		}
		if _, written := w.dc.Dispatch(typ, payload); written {
			return true, nil
		}
	}
	return false, nil
}

func (s *source) sendInteraction(action string, probe bool) error {
	w := s.w
	user := discordUser
	if s.stranger {
		user = discordStranger
	}
	id := w.nextDiscordID()
	t := w.newTurn(&Turn{Platform: "discord", Source: "discord-interactions:" + s.channel, Target: "chat:discord:" + s.channel,
		TurnID: "discord.i." + id, Action: action, Token: "itok-" + id, Identity: "discord:" + user, Stranger: s.stranger, Probe: probe})
	cmd := commandFor(action, t.Marker, s.chat)
	t.MarkerFile, t.Text = cmd.markerFile, "/"+cmd.interaction
	w.mu.Lock()
	w.byTurnID[t.TurnID] = t
	w.mu.Unlock()
	i := discordtest.Interaction{ID: id, Token: t.Token, Channel: s.channel, Guild: w.dc.GuildID,
		User: user, Command: cmd.interaction, Options: cmd.options}
	payload := w.dc.InteractionPayload(i)
	if action == "upload" {
		payload = w.discordUploadInteraction(i, t.Marker)
		t.Text = "/fs upload"
	}
	return s.dispatchTurn("INTERACTION_CREATE", payload, t)
}

func (s *source) sendDiscordMessage(action string, probe bool) error {
	w := s.w
	user := discordUser
	if s.stranger {
		user = discordStranger
	}
	id := w.nextDiscordID()
	t := w.newTurn(&Turn{Platform: "discord", Source: "discord-messages:" + s.channel, Ordered: true, Target: "chat:discord:" + s.channel,
		TurnID: "discord." + s.channel + "." + id, Action: action, Identity: "discord:" + user, Stranger: s.stranger, Probe: probe})
	cmd := commandFor(action, t.Marker, s.chat)
	if err := w.prepare(cmd); err != nil {
		return err
	}
	t.MarkerFile, t.Text = cmd.markerFile, "!"+cmd.text
	w.mu.Lock()
	w.byTurnID[t.TurnID] = t
	w.mu.Unlock()
	msg := discordtest.ChannelMessage{ID: id, Channel: s.channel, Guild: w.dc.GuildID, User: user, Content: t.Text}
	payload := w.dc.MessagePayload(msg)
	if action == "upload" {
		payload = w.discordUploadMessage(msg, t.Marker)
	}
	return s.dispatchTurn("MESSAGE_CREATE", payload, t)
}

// dispatchTurn dispatches t's gateway event, records whether it reached
// the hub, and delivers it a second time later when the source duplicates.
func (s *source) dispatchTurn(typ string, payload any, t *Turn) error {
	w := s.w
	written, err := w.dispatch(typ, payload, t)
	if err != nil {
		return err
	}
	w.mu.Lock()
	t.Delivered = written
	w.mu.Unlock()
	if written && s.duplicate() {
		w.mu.Lock()
		t.Duplicated = true
		w.mu.Unlock()
		s.later(func() { _, _ = w.dispatch(typ, payload, nil) })
	}
	return nil
}

// later runs f at once or after a short random delay, counted as traffic.
func (s *source) later(f func()) {
	w := s.w
	d := time.Duration(w.randN(1500)) * time.Millisecond
	if w.randN(2) == 0 {
		f()
		return
	}
	w.traffic.Add(1)
	w.active.Add(1)
	go func() {
		defer w.traffic.Done()
		defer w.active.Add(-1)
		if sleepCtx(w.ctx, d) {
			f()
		}
	}()
}

// sendWeb posts one panel message, again and again until the hub takes it
// (a web client whose request failed sends it again with the same id).
func (w *world) sendWeb(action string, probe bool, dup float64) error {
	t := w.newTurn(&Turn{Platform: "web", Source: "web", Ordered: true, Target: "web", Action: action, Identity: "web", Probe: probe})
	client := fmt.Sprintf("lab%06d", t.Seq)
	t.TurnID = "web." + client
	cmd := commandFor(action, t.Marker, 0)
	if err := w.prepare(cmd); err != nil {
		return err
	}
	t.MarkerFile, t.Text = cmd.markerFile, "/"+cmd.text
	w.mu.Lock()
	w.byTurnID[t.TurnID] = t
	w.mu.Unlock()
	t.Sent = time.Now()
	post := func() (bool, error) { return w.web.post(w.ctx, t.Text, client, 2*time.Minute) }
	if action == "upload" {
		t.Text = uploadPath(t.Marker)
		post = func() (bool, error) { return w.web.postUpload(w.ctx, t.Marker, client, 2*time.Minute) }
	}
	ok, err := post()
	if err != nil {
		return err
	}
	w.mu.Lock()
	t.Delivered = ok
	w.mu.Unlock()
	if ok && dup > 0 && w.randFloat() < dup {
		w.mu.Lock()
		t.Duplicated = true
		w.mu.Unlock()
		if _, err := post(); err != nil {
			return err
		}
	}
	return nil
}

// webClient is the panel's side of the web API: it posts messages and
// follows /api/events, across hub restarts.
type webClient struct {
	base, token string
	c           *http.Client

	mu     sync.Mutex
	events []WebEvent
	seen   map[string]bool // outbox ids
	done   chan struct{}
}

func newWebClient(base, token string) *webClient {
	return &webClient{base: base, token: token, c: &http.Client{Timeout: 60 * time.Second}, seen: map[string]bool{}, done: make(chan struct{})}
}

// post sends a message until the hub answers 202, retrying while it
// cannot be reached or fails; it reports false if it gave up at limit.
func (c *webClient) post(ctx context.Context, text, clientID string, limit time.Duration) (bool, error) {
	body, _ := json.Marshal(map[string]string{"text": text, "client_turn_id": clientID})
	return c.send(ctx, func() io.Reader { return bytes.NewReader(body) }, "application/json", limit)
}

// send posts the body body makes to /api/messages as post does.
func (c *webClient) send(ctx context.Context, body func() io.Reader, ctype string, limit time.Duration) (bool, error) {
	deadline := time.Now().Add(limit)
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/api/messages", body())
		if err != nil {
			return false, err
		}
		req.Header.Set("Authorization", "Bearer "+c.token)
		req.Header.Set("Content-Type", ctype)
		resp, err := c.c.Do(req)
		if err == nil {
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			switch {
			case resp.StatusCode == http.StatusAccepted:
				return true, nil
			case resp.StatusCode/100 == 4:
				return false, fmt.Errorf("POST /api/messages answered %d: %s", resp.StatusCode, raw)
			}
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return false, nil
		}
		if !sleepCtx(ctx, 200*time.Millisecond) {
			return false, nil
		}
	}
}

// do makes one request to the web API with the bearer token.
func (c *webClient) do(ctx context.Context, method, path string, body any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	return resp.StatusCode, raw, err
}

// follow reads /api/events until ctx ends, reconnecting with the last
// event id whenever the stream breaks.
func (c *webClient) follow(ctx context.Context) {
	defer close(c.done)
	last := ""
	for ctx.Err() == nil {
		last = c.stream(ctx, last)
		sleepCtx(ctx, 100*time.Millisecond)
	}
}

func (c *webClient) wait() { <-c.done }

func (c *webClient) stream(ctx context.Context, last string) string {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/api/events", nil)
	if err != nil {
		return last
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if last != "" {
		req.Header.Set("Last-Event-ID", last)
	}
	sc := &http.Client{} // no timeout: a stream lasts
	resp, err := sc.Do(req)
	if err != nil {
		return last
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return last
	}
	rd := newLineReader(resp.Body)
	var data []byte
	for {
		line, err := rd.next()
		if err != nil {
			return last
		}
		switch {
		case bytes.HasPrefix(line, []byte("id: ")):
			last = string(line[4:])
		case bytes.HasPrefix(line, []byte("data: ")):
			data = append(data[:0], line[6:]...)
		case len(line) == 0 && len(data) > 0:
			var ev WebEvent
			if json.Unmarshal(data, &ev) == nil {
				c.record(ev)
			}
			data = data[:0]
		}
	}
}

func (c *webClient) record(ev WebEvent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events = append(c.events, ev)
	if ev.OutboxID != "" {
		c.seen[ev.OutboxID] = true
	}
}

// count is how many distinct chunks the client has seen.
func (c *webClient) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.seen)
}

func (c *webClient) snapshot() []WebEvent {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]WebEvent(nil), c.events...)
}

func (c *webClient) sawText(s string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ev := range c.events {
		if ev.OutboxID != "" && bytes.Contains([]byte(ev.Text), []byte(s)) {
			return true
		}
	}
	return false
}

// lineReader splits a stream into lines without their line ends.
type lineReader struct {
	r   io.Reader
	buf []byte
}

func newLineReader(r io.Reader) *lineReader { return &lineReader{r: r} }

func (l *lineReader) next() ([]byte, error) {
	for {
		if i := bytes.IndexByte(l.buf, '\n'); i >= 0 {
			line := bytes.TrimRight(l.buf[:i], "\r")
			out := append([]byte(nil), line...)
			l.buf = l.buf[i+1:]
			return out, nil
		}
		chunk := make([]byte, 32<<10)
		n, err := l.r.Read(chunk)
		l.buf = append(l.buf, chunk[:n]...)
		if err != nil {
			return nil, err
		}
	}
}
