package web

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/internal/testkit"

	"github.com/a6afc2ce/hermes-hub/outbox"
)

// historyEvents returns GET /api/history.
func (e *testEnv) historyEvents() []Event {
	e.t.Helper()
	var h HistoryResponse
	e.authed("GET", "/api/history", "").json(e.t, &h)
	return h.Events
}

// waitMirrored waits until an outbox id is in the outbound mirror.
func (e *testEnv) waitMirrored(outboxID string) {
	e.t.Helper()
	waitUntil(e.t, outboxID+" in the mirror", func() bool {
		return strings.Contains(string(e.authed("GET", "/api/mirror?direction=out&n=1000", "").body), outboxID)
	})
}

func (e *testEnv) waitReplies(n int) []Event {
	e.t.Helper()
	var evs []Event
	waitUntil(e.t, fmt.Sprintf("%d replies in the history", n), func() bool {
		evs = e.historyEvents()
		c := 0
		for _, ev := range evs {
			if ev.Type == EventReply {
				c++
			}
		}
		return c >= n
	})
	return evs
}

// checkSequence asserts that evs are the events 1..len(evs) of one epoch,
// each once, in order.
func checkSequence(t *testing.T, evs []Event) {
	t.Helper()
	for i, ev := range evs {
		epoch, seq, err := parseEventID(ev.ID)
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if seq != uint64(i+1) {
			t.Fatalf("event %d has id %s (seq %d): events were lost or duplicated; ids: %v", i, ev.ID, seq, ids(evs))
		}
		if i > 0 {
			if e0, _, _ := parseEventID(evs[0].ID); e0 != epoch {
				t.Fatalf("event %d is from epoch %s, not %s", i, epoch, e0)
			}
		}
	}
}

func ids(evs []Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.ID
	}
	return out
}

// perTurn counts inbound and reply events per turn.
func perTurn(evs []Event) map[string][2]int {
	m := map[string][2]int{}
	for _, ev := range evs {
		c := m[ev.TurnID]
		switch ev.Type {
		case EventInbound:
			c[0]++
		case EventReply:
			c[1]++
		}
		m[ev.TurnID] = c
	}
	return m
}

func TestEventsResumeLosesNothing(t *testing.T) {
	e := newEnv(t, envConfig{})
	for i := 1; i <= 8; i++ {
		e.writeFile(fmt.Sprintf("f%d.txt", i), "x\n")
	}
	c1 := e.openSSE("")
	for i := 1; i <= 3; i++ {
		e.message(fmt.Sprintf("/fs.exists f%d.txt", i), fmt.Sprintf("r%d", i))
	}
	// Read a little, then drop the connection mid-stream.
	var got []Event
	for len(got) < 3 {
		got = append(got, c1.next())
	}
	c1.close()
	last := got[len(got)-1].ID

	// More turns while the client is away.
	for i := 4; i <= 6; i++ {
		e.message(fmt.Sprintf("/fs.exists f%d.txt", i), fmt.Sprintf("r%d", i))
	}
	e.waitReplies(6)

	c2 := e.openSSE(last)
	seenReply := map[string]bool{}
	for _, ev := range got {
		if ev.Type == EventReply {
			seenReply[ev.TurnID] = true
		}
	}
	got = append(got, c2.until(func(ev Event) bool {
		if ev.Type == EventReset {
			t.Fatalf("reset for a known id %s", last)
		}
		if ev.Type == EventReply {
			seenReply[ev.TurnID] = true
		}
		return len(seenReply) == 6
	})...)
	// And live ones keep coming on the resumed stream.
	e.message("/fs.exists f7.txt", "r7")
	got = append(got, c2.until(func(ev Event) bool { return ev.Type == EventReply && ev.TurnID == "web.r7" })...)

	checkSequence(t, got)
	counts := perTurn(got)
	for i := 1; i <= 7; i++ {
		turn := fmt.Sprintf("web.r%d", i)
		if counts[turn] != [2]int{1, 1} {
			t.Errorf("turn %s: %d inbound and %d reply events, want 1 and 1", turn, counts[turn][0], counts[turn][1])
		}
	}
	for _, ev := range got {
		if ev.Type == EventReply && !strings.Contains(ev.Text, "exists") {
			t.Errorf("reply %s: %q", ev.ID, ev.Text)
		}
		if ev.Type == EventReply && !strings.HasPrefix(ev.OutboxID, "reply:"+ev.TurnID+":web:") {
			t.Errorf("reply %s has outbox id %q", ev.ID, ev.OutboxID)
		}
	}

	// The query parameter works like the header (for clients that cannot
	// set it).
	mid := got[4]
	hr, _ := http.NewRequest("GET", e.ts.URL+"/api/events?last_event_id="+url.QueryEscape(mid.ID), nil)
	hr.Header.Set("Authorization", "Bearer "+e.token)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res, err := e.ts.Client().Do(hr.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	c3 := &sseClient{t: t, res: res, events: make(chan Event, 100), lines: make(chan string, 10), done: make(chan struct{}), cancel: cancel}
	go c3.read()
	defer c3.close()
	if ev := c3.next(); ev.ID != got[5].ID {
		t.Errorf("?last_event_id=%s resumed at %s, want %s", mid.ID, ev.ID, got[5].ID)
	}
}

func TestEventsResetForUnknownID(t *testing.T) {
	e := newEnv(t, envConfig{opts: func(o *Options) { o.Config.History = 4 }})
	for i := 1; i <= 4; i++ {
		e.message("/fs.exists .", fmt.Sprintf("t%d", i))
	}
	ring := e.waitReplies(2) // 8 events published; the ring keeps 4
	waitUntil(t, "all replies", func() bool { ring = e.historyEvents(); return len(ring) == 4 && lastSeq(ring) == 8 })
	epoch, _, _ := parseEventID(ring[0].ID)

	for _, id := range []string{
		"0123456789ab-3",   // another run
		epoch + "-1",       // evicted from the ring
		epoch + "-99",      // not issued yet
		"garbage",          // not an id
		epoch + "-0",       // seq starts at 1
		"-5",               // no epoch
		epoch + "-" + "1x", // not a number
	} {
		c := e.openSSE(id)
		first := c.next()
		if first.Type != EventReset || first.ID != "" || first.Text == "" {
			t.Errorf("Last-Event-ID %q: first event %+v, want a reset without id", id, first)
		}
		var replay []Event
		for len(replay) < 4 {
			replay = append(replay, c.next())
		}
		if fmt.Sprint(ids(replay)) != fmt.Sprint(ids(ring)) {
			t.Errorf("Last-Event-ID %q: replay %v, want the whole ring %v", id, ids(replay), ids(ring))
		}
		c.close()
	}

	// The oldest id still in the ring's reach resumes without a reset.
	c := e.openSSE(epoch + "-4")
	if ev := c.next(); ev.ID != epoch+"-5" {
		t.Errorf("resume from the event just before the ring: got %+v", ev)
	}
	c.close()
	// The newest id replays nothing and then gets live events.
	c = e.openSSE(ring[3].ID)
	e.message("/fs.exists .", "t5")
	if ev := c.next(); ev.Type != EventInbound || ev.TurnID != "web.t5" {
		t.Errorf("after the newest id: got %+v, want the live inbound of t5", ev)
	}
}

func lastSeq(evs []Event) uint64 {
	if len(evs) == 0 {
		return 0
	}
	_, s, _ := parseEventID(evs[len(evs)-1].ID)
	return s
}

func TestSlowClientIsDroppedNotWaitedFor(t *testing.T) {
	e := newEnv(t, envConfig{noServer: true, opts: func(o *Options) { o.ClientBuffer = 2 }})
	b := e.srv.events
	slow, replay, reset := b.subscribe("")
	if len(replay) != 0 || reset {
		t.Fatalf("new subscriber on an empty ring: replay %d reset %v", len(replay), reset)
	}
	fast, _, _ := b.subscribe("")
	var last string
	for i := 0; i < 5; i++ {
		last = e.srv.publishExchange(hub.Exchange{OutboxID: fmt.Sprintf("reply:web.s%d:web:0", i), Kind: "reply", TurnID: fmt.Sprintf("web.s%d", i), Text: fmt.Sprint("chunk ", i)}).ID
		<-fast.ch // the fast client keeps up
	}
	select {
	case <-slow.gone:
	default:
		t.Fatal("a client 5 events behind with a buffer of 2 was not dropped")
	}
	select {
	case <-fast.gone:
		t.Fatal("a client that keeps up was dropped")
	default:
	}
	if st := b.stats(); st.Dropped != 1 || st.Clients != 1 || st.LastID != last {
		t.Errorf("stats = %+v", st)
	}
	b.unsubscribe(slow) // safe after the drop
	b.unsubscribe(fast)
	// The dropped client resumes from the last event it got and loses nothing.
	got := []Event{<-slow.ch, <-slow.ch}
	_, rest, reset := b.subscribe(got[1].ID)
	if reset || len(rest) != 3 {
		t.Fatalf("resume after a drop: %d events, reset %v", len(rest), reset)
	}
	checkSequence(t, append(got, rest...))
}

// TestEachChunkShowsOnce: a chunk recorded twice (sent again after a crash
// between the send and its mark) is one event; the sender only checks
// that a chunk is for the web.
func TestEachChunkShowsOnce(t *testing.T) {
	e := newEnv(t, envConfig{noServer: true})
	x := hub.Exchange{OutboxID: "reply:web.d1:web:0", Kind: "reply", TurnID: "web.d1", Text: "hello"}
	ev1, ev2 := e.srv.publishExchange(x), e.srv.publishExchange(x)
	if ev1.ID == "" || ev1.ID != ev2.ID {
		t.Errorf("events %q and %q, want the same event id", ev1.ID, ev2.ID)
	}
	if n := len(e.srv.events.snapshot()); n != 1 {
		t.Errorf("%d events after recording one chunk twice", n)
	}
	e.srv.publishExchange(hub.Exchange{OutboxID: "notice:web.d2:web:0", Kind: "notice", TurnID: "web.d2", Text: "restarted"})
	if evs := e.srv.events.snapshot(); evs[1].Type != EventNotice {
		t.Errorf("a notice chunk became %q", evs[1].Type)
	}
	if _, err := e.srv.Sender().Send(context.Background(), &outbox.Entry{ID: "reply:web.d1:web:0", Target: chat.WebKey}); err != nil {
		t.Errorf("a web chunk: %v", err)
	}
	if _, err := e.srv.Sender().Send(context.Background(), &outbox.Entry{ID: "x", Target: chat.LocalKey("a")}); !outbox.IsPermanent(err) {
		t.Errorf("a non-web target: err = %v, want permanent", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.srv.Sender().Send(ctx, &outbox.Entry{ID: "reply:web.d3:web:0", Target: chat.WebKey}); err == nil {
		t.Error("Send with a cancelled context succeeded")
	}
}

func TestHeartbeat(t *testing.T) {
	clk := fakeClock()
	e := newEnv(t, envConfig{opts: func(o *Options) { o.Clock = clk }})
	c := e.openSSE("")
	waitUntil(t, "the heartbeat timer", func() bool { return clk.Pending() > 0 })
	for i := 0; i < 2; i++ {
		clk.Advance(DefaultHeartbeat)
		select {
		case l := <-c.lines:
			if l != ": heartbeat" {
				t.Errorf("comment line %q", l)
			}
		case <-time.After(testkit.Wait):
			t.Fatalf("no heartbeat %d after advancing the clock", i+1)
		}
		waitUntil(t, "the next heartbeat timer", func() bool { return clk.Pending() > 0 })
	}
}

func TestHistorySurvivesRestart(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	e1 := newEnv(t, envConfig{workspace: ws, state: state})
	e1.writeFile("a.txt", "alpha\n")
	// One turn at a time, so that the mirrors' order is the ring's order.
	// A reply is in the mirror file (written) before the fsync that lets it
	// into the ring: wait for both.
	e1.message("/fs.readFile a.txt", "h1")
	e1.waitMirrored("reply:web.h1:web:0")
	e1.waitReplies(1)
	e1.message("/fs.lineCount a.txt", "h2")
	e1.waitMirrored("reply:web.h2:web:0")
	e1.waitReplies(2)
	before := e1.historyEvents()
	oldLast := before[len(before)-1].ID
	e1.close()

	e2 := newEnv(t, envConfig{workspace: ws, state: state})
	after := e2.historyEvents()
	if len(after) != len(before) {
		t.Fatalf("history after restart has %d events, want %d:\nbefore %+v\nafter %+v", len(after), len(before), before, after)
	}
	for i := range before {
		b, a := before[i], after[i]
		if a.Type != b.Type || a.TurnID != b.TurnID || a.Text != b.Text || a.OutboxID != b.OutboxID || a.TS.IsZero() {
			t.Errorf("event %d: before %+v, after %+v", i, b, a)
		}
	}
	checkSequence(t, after)
	if ep1, _, _ := parseEventID(oldLast); strings.HasPrefix(after[0].ID, ep1+"-") {
		t.Error("the new run reuses the old run's epoch")
	}
	// A client from the last run gets a reset and the whole history.
	c := e2.openSSE(oldLast)
	if ev := c.next(); ev.Type != EventReset {
		t.Fatalf("id from the previous run: first event %+v, want reset", ev)
	}
	for i := range after {
		if ev := c.next(); ev.ID != after[i].ID {
			t.Fatalf("replay %d = %s, want %s", i, ev.ID, after[i].ID)
		}
	}
	// A chunk re-sent after a crash (delivered before the stop, seen again)
	// is not shown twice.
	var reply Event
	for _, ev := range after {
		if ev.Type == EventReply {
			reply = ev
			break
		}
	}
	if ev := e2.srv.publishExchange(hub.Exchange{OutboxID: reply.OutboxID, Kind: "reply", TurnID: reply.TurnID, Text: reply.Text}); ev.ID != reply.ID {
		t.Errorf("re-sent chunk: event %q, want the seeded event %s", ev.ID, reply.ID)
	}
	if n := len(e2.historyEvents()); n != len(after) {
		t.Errorf("history grew from %d to %d events on a re-sent chunk", len(after), n)
	}
	// A resubmitted turn from the last run is not run or shown again.
	if m := e2.message("/fs.readFile a.txt", "h1"); m.Status != "duplicate" {
		t.Errorf("turn h1 after restart: %+v", m)
	}
	if n := len(e2.historyEvents()); n != len(after) {
		t.Errorf("history grew from %d to %d events on a duplicate", len(after), n)
	}
}

func TestParseEventID(t *testing.T) {
	cases := []struct {
		in    string
		epoch string
		seq   uint64
		ok    bool
	}{
		{"abc-1", "abc", 1, true},
		{"a-b-42", "a-b", 42, true},
		{"abc-0", "", 0, false},
		{"abc-", "", 0, false},
		{"-1", "", 0, false},
		{"abc", "", 0, false},
		{"abc--1", "abc-", 1, true},
		{"abc-+1", "", 0, false},
		{"abc-01", "", 0, false},
		{"abc-18446744073709551616", "", 0, false},
	}
	for _, c := range cases {
		ep, seq, err := parseEventID(c.in)
		if (err == nil) != c.ok || ep != c.epoch || seq != c.seq {
			t.Errorf("parseEventID(%q) = %q, %d, %v", c.in, ep, seq, err)
		}
	}
}

func FuzzParseEventID(f *testing.F) {
	for _, s := range []string{"0123456789ab-1", "a-b-c-9", "-", "x-0", "x-99999999999999999999", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ep, seq, err := parseEventID(s)
		if err != nil {
			return
		}
		if seq == 0 || ep == "" || fmt.Sprintf("%s-%d", ep, seq) != s {
			t.Fatalf("parseEventID(%q) = %q, %d: does not round-trip", s, ep, seq)
		}
	})
}

// FuzzVerifyCookie: verify never panics, and whatever it accepts is a
// payload of the right size signed under the key (the fuzzer's workers
// issue their own cookies under the same token, so "issued here" cannot be
// the property).
func FuzzVerifyCookie(f *testing.F) {
	clk := fakeClock()
	a := newAuthenticator("fuzz-token-0123456789", clk.Now)
	good, _, _ := a.issue()
	f.Add(good)
	f.Add(good + "x")
	f.Add("." + good)
	f.Add("")
	f.Add("AAAA.BBBB")
	f.Fuzz(func(t *testing.T, s string) {
		if _, _, err := a.verify(s); err != nil {
			return
		}
		payload, mac, _ := strings.Cut(s, ".")
		p, err := base64.RawURLEncoding.DecodeString(payload)
		if mac != a.sign(payload) || err != nil || len(p) != cookiePayloadLen {
			t.Fatalf("verify accepted %q, which is not a signed cookie", s)
		}
	})
}

func TestCookieTamperingRefused(t *testing.T) {
	clk := fakeClock()
	a := newAuthenticator("tamper-token-0123456789", clk.Now)
	good, _, err := a.issue()
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.verify(good); err != nil {
		t.Fatalf("a fresh cookie is refused: %v", err)
	}
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_."
	for i := 0; i < len(good); i++ {
		for _, c := range []byte(alphabet) {
			if c == good[i] {
				continue
			}
			bad := good[:i] + string(c) + good[i+1:]
			if _, _, err := a.verify(bad); err == nil {
				t.Fatalf("changing byte %d of the cookie to %q was accepted", i, c)
			}
		}
	}
	other := newAuthenticator("another-token-0123456789", clk.Now)
	if _, _, err := other.verify(good); err == nil {
		t.Error("a cookie signed for one token is accepted under another")
	}
}
