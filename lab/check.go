package lab

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/a6afc2ce/hermes-hub/adapters/discord"
	"github.com/a6afc2ce/hermes-hub/adapters/discord/discordtest"
	"github.com/a6afc2ce/hermes-hub/adapters/telegram/telegramtest"
	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/outbox"
	"github.com/a6afc2ce/hermes-hub/store"
)

// Turn is one inbound the lab sent.
type Turn struct {
	Seq      int
	Platform string // telegram, discord, web
	// Source is what orders turns: a Telegram chat, a Discord channel's
	// messages, the web client; interactions are not ordered.
	Source  string
	Ordered bool
	Target  string // the reply target key, chat:telegram:-2001
	TurnID  string // the hub's turn id
	Action  string
	Marker  string
	// MarkerFile is the workspace file the action writes its marker to.
	MarkerFile string
	Text       string
	Token      string // a Discord interaction's token
	UpdateID   int64  // a Telegram update's id
	Identity   string
	Stranger   bool
	Probe      bool // the final "still answering" turn
	Duplicated bool
	Sent       time.Time
	// Delivered: the inbound reached the hub (Telegram: getUpdates handed
	// it out; Discord: written to the gateway connection; web: answered
	// 202).
	Delivered bool
}

// Window is a span of time, such as a mirror fault.
type Window struct {
	From, To time.Time
}

func (w Window) holds(t time.Time) bool { return !t.Before(w.From) && !t.After(w.To) }

// WebEvent is one event the web client saw on /api/events.
type WebEvent struct {
	Type     string `json:"type"`
	TurnID   string `json:"turn_id"`
	OutboxID string `json:"outbox_id"`
	Text     string `json:"text"`
	ID       string `json:"id"`
}

// Observation is everything the checks look at once a scenario is over.
type Observation struct {
	Turns []Turn
	// Kills are the times the lab killed the hub with SIGKILL; Stops the
	// times it stopped it gracefully.
	Kills, Stops []time.Time
	// Cuts counts, by platform, the times the lab took a platform down
	// by closing its port and every open connection: a request in flight
	// then may have been acted on while its answer never reached the hub.
	Cuts map[string]int
	// MirrorFaults are the spans during which the mirror directory was
	// full.
	MirrorFaults []Window
	Expect       Expectations

	Pending, Delivered, Dead []outbox.Entry
	Inbound, Outbound        []store.MirrorRecord

	Telegram []telegramtest.Message
	Discord  []discordtest.Receipt
	Web      []WebEvent
	// Files holds the workspace files the markers go to; Uploads the files
	// saved under up/ by path (files.go).
	Files   map[string]string
	Uploads map[string][]byte
	// HubLogs are the output of every hub run, by run.
	HubLogs []string
	// Alive is empty when the hub answered the final admin request; else
	// why not.
	Alive string
	// Schedule says the hub ran the schedule tick (hub.schedule); Local
	// is what its local target received.
	Schedule bool
	Local    []localDelivery
	// Confirms are the held calls of confirm steps (hub.confirm).
	Confirms []ConfirmCall
}

// Violation is an invariant that does not hold.
type Violation struct {
	Invariant string
	Detail    string
}

func (v Violation) String() string { return v.Invariant + ": " + v.Detail }

// Figures are the counts a scenario reports.
type Figures struct {
	Turns, TurnsDelivered, Answered        int
	Chunks, Dead, Receipts                 int
	CrashDuplicates                        int            // chunks received twice in the crash window
	CrashDuplicatesByTarget                map[string]int // the same, by target
	NonceRepeats                           int            // Discord channel sends answered from their nonce
	MirrorGapsInFault, MirrorGapsInCrash   int
	InboundGapsInFault, InboundGapsInCrash int
	DiscordLostInCrash                     int
	SideEffects                            int
	UnrecordedTelegram, UnrecordedDiscord  int
	DuplicateSent                          int
	// Uploads counts the files saved whole under up/; FileReplies the
	// documents of blob.bin Telegram received.
	Uploads, FileReplies int
	// The schedule tick: runs mirrored, runs with a result, lines its
	// program wrote, runs answered with a restart notice.
	ScheduleRuns, ScheduleResults, ScheduleTicks, ScheduleNotices int
	// The held calls: confirmed (ran once), confirmed but cut short by a
	// kill before their program ran, cancelled (never ran).
	ConfirmRuns, ConfirmInterrupted, ConfirmCancels int
}

// adapterNotices are texts the Discord adapter writes into an
// interaction's original response itself, outside the outbox. The restart
// notice is replaced by the turn's answer at the next start: it shares the
// answer's message id, so it must not count as an arrival of that answer.
var adapterNotices = []string{
	"⚠ The command failed; the details were sent only to you.",
	"This hub does not know you (",
	discord.RestartNotice,
	"This hub does not serve this server or channel.",
}

// receipt is one arrival of a chunk at a platform, mapped to its entry.
type receipt struct {
	id     string // outbox id
	target string
	pos    int // arrival order within its platform
	at     time.Time
}

// Check runs every invariant over o and returns what does not hold, with
// the figures.
func Check(o Observation) ([]Violation, Figures) {
	c := &checker{o: o, fig: Figures{CrashDuplicatesByTarget: map[string]int{}}}
	c.index()
	c.checkDelivered()
	c.checkReceipts()
	c.checkDuplicates()
	c.checkOrder()
	c.checkAnswers()
	c.checkMirrors()
	c.checkSideEffects()
	c.checkUploads()
	c.checkSchedule()
	c.checkConfirms()
	c.checkAlive()
	return c.v, c.fig
}

type checker struct {
	o   Observation
	v   []Violation
	fig Figures

	entries   map[string]outbox.Entry // every known entry by id (pending, delivered, dead)
	byTurn    map[string][]string     // turn id → entry ids
	turnByID  map[string]*Turn
	turnByTok map[string]*Turn
	texts     map[string]string  // outbox id → text (the entry's, else the outbound mirror's)
	first     map[string]receipt // outbox id → first arrival
	arrivals  map[string]int     // outbox id → arrivals
	extra     map[string]int     // target → arrivals beyond the first
	recv      []receipt          // every first arrival, all platforms
}

func (c *checker) fail(inv, format string, args ...any) {
	c.v = append(c.v, Violation{Invariant: inv, Detail: fmt.Sprintf(format, args...)})
}

func (c *checker) index() {
	c.entries = map[string]outbox.Entry{}
	c.byTurn = map[string][]string{}
	for _, list := range [][]outbox.Entry{c.o.Pending, c.o.Delivered, c.o.Dead} {
		for _, e := range list {
			if e.TurnID == "" || e.Target.IsZero() {
				if k, turn, target, idx, err := outbox.ParseID(e.ID); err == nil {
					e.Kind, e.TurnID, e.Target, e.Index = k, turn, target, idx
				}
			}
			c.entries[e.ID] = e
			c.byTurn[e.TurnID] = append(c.byTurn[e.TurnID], e.ID)
		}
	}
	c.texts = map[string]string{}
	for _, r := range c.o.Outbound {
		if id := r.Meta[store.MetaOutboxID]; id != "" {
			c.texts[id] = r.Text
		}
	}
	for id, e := range c.entries {
		if e.Text != "" {
			c.texts[id] = e.Text
		}
	}
	c.turnByID = map[string]*Turn{}
	c.turnByTok = map[string]*Turn{}
	for i := range c.o.Turns {
		t := &c.o.Turns[i]
		c.turnByID[t.TurnID] = t
		if t.Token != "" {
			c.turnByTok[t.Token] = t
		}
		c.fig.Turns++
		if t.Delivered {
			c.fig.TurnsDelivered++
		}
		if t.Duplicated {
			c.fig.DuplicateSent++
		}
	}
	c.fig.Chunks = len(c.o.Delivered)
	c.fig.Dead = len(c.o.Dead)
	c.first = map[string]receipt{}
	c.arrivals = map[string]int{}
	c.extra = map[string]int{}
}

// checkDelivered: nothing is left pending, and dead letters only where the
// scenario allows them.
func (c *checker) checkDelivered() {
	for _, e := range c.o.Pending {
		c.fail("delivered", "%s is still pending after the hub settled (attempts %d, last error %q)", e.ID, e.Attempts, e.LastError)
	}
	if c.o.Expect.DeadLetters != "allowed" {
		for _, e := range c.o.Dead {
			c.fail("delivered", "%s became a dead letter: %s", e.ID, e.LastError)
		}
	}
}

// arrive records one arrival of outbox id.
func (c *checker) arrive(id string, pos int, at time.Time) {
	e := c.entries[id]
	c.arrivals[id]++
	if c.arrivals[id] == 1 {
		r := receipt{id: id, target: e.Target.String(), pos: pos, at: at}
		c.first[id] = r
		c.recv = append(c.recv, r)
		return
	}
	c.extra[e.Target.String()]++
}

// checkReceipts maps what the fakes received to outbox ids and checks that
// every delivered chunk arrived.
func (c *checker) checkReceipts() {
	delivered := map[string]outbox.Entry{}
	byMsg := map[string]string{} // platform|message id → outbox id
	for _, e := range c.o.Delivered {
		e := c.entries[e.ID]
		delivered[e.ID] = e
		if e.PlatformMessageID != "" {
			byMsg[e.Target.Label()+"|"+e.PlatformMessageID] = e.ID
		}
	}

	// Telegram: the outbox keeps each chunk's message id. A message the
	// outbox does not know is an earlier send of a chunk that was sent
	// again (a kill came between the send and its delivered mark): the next
	// known message to the same chat with the same thread, method, text and
	// reply is that chunk.
	type tgKey struct{ chat, thread, method, text, caption, reply string }
	tgKeyOf := func(m telegramtest.Message) tgKey {
		return tgKey{m.ChatID, m.ThreadID, m.Method, m.Text, m.Caption, m.ReplyTo}
	}
	tgIDs := make([]string, len(c.o.Telegram))
	for i, m := range c.o.Telegram {
		tgIDs[i] = byMsg["telegram|"+strconv.FormatInt(m.MessageID, 10)]
	}
	for i, m := range c.o.Telegram {
		id := tgIDs[i]
		if id == "" {
			c.fig.UnrecordedTelegram++
			id = twin(len(c.o.Telegram), i, tgIDs, func(j int) bool { return tgKeyOf(c.o.Telegram[j]) == tgKeyOf(m) })
		}
		if id == "" && isProgress(m.Text) {
			continue // a progress message, not a chunk
		}
		if id == "" {
			c.fail("no duplicates", "Telegram chat %s received a message no outbox chunk explains: %q", m.ChatID, preview(m.Text+m.Caption))
			continue
		}
		if want := "chat:telegram:" + m.ChatID; c.entries[id].Target.String() != want && !strings.HasPrefix(c.entries[id].Target.String(), want+":") {
			c.fail("delivered", "%s for %s arrived in Telegram chat %s", id, c.entries[id].Target, m.ChatID)
		}
		c.arrive(id, i, m.At)
	}

	// Discord: channel messages carry the nonce of their outbox id;
	// interaction responses and follow-ups are known by message id.
	nonces := map[string]string{}
	for id, e := range c.entries {
		if e.Target.Label() == "discord" {
			nonces[discord.Nonce(id)] = id
		}
	}
	dcIDs := make([]string, len(c.o.Discord))
	for i, r := range c.o.Discord {
		if id, ok := byMsg["discord|"+r.MessageID]; ok && r.Kind != discordtest.ReceiptChannel && r.Kind != discordtest.ReceiptEdit &&
			!(r.Kind == discordtest.ReceiptOriginal && (isAdapterNotice(r.Content) || isProgress(r.Content))) {
			dcIDs[i] = id
		}
	}
	for i, r := range c.o.Discord {
		switch r.Kind {
		case discordtest.ReceiptEdit:
			continue // a progress message edited in place: never a chunk
		case discordtest.ReceiptChannel:
			id, ok := nonces[r.Nonce]
			if !ok && isProgress(r.Content) {
				continue // a progress message, not a chunk
			}
			if !ok {
				c.fail("no duplicates", "Discord channel %s received a message whose nonce %q matches no outbox chunk: %q", r.ChannelID, r.Nonce, preview(r.Content))
				continue
			}
			if r.Repeat {
				c.fig.NonceRepeats++ // Discord answered from the nonce: nothing new appeared
				continue
			}
			if want := "chat:discord:" + r.ChannelID; c.entries[id].Target.String() != want {
				c.fail("delivered", "%s for %s arrived in Discord channel %s", id, c.entries[id].Target, r.ChannelID)
			}
			c.arrive(id, i, r.At)
		default:
			id := dcIDs[i]
			if id == "" {
				if r.Kind == discordtest.ReceiptOriginal && (isAdapterNotice(r.Content) || isProgress(r.Content)) {
					continue // the adapter's own words or a call's progress, not a chunk
				}
				c.fig.UnrecordedDiscord++
				id = twin(len(c.o.Discord), i, dcIDs, func(j int) bool {
					o := c.o.Discord[j]
					return o.Kind == r.Kind && o.Token == r.Token && o.Content == r.Content
				})
			}
			if id == "" {
				c.fail("no duplicates", "Discord %s of interaction token %s matches no outbox chunk: %q", r.Kind, r.Token, preview(r.Content))
				continue
			}
			if t := c.turnByTok[r.Token]; t != nil && t.TurnID != c.entries[id].TurnID {
				c.fail("delivered", "%s arrived as a response to interaction %s of %s", id, r.Token, t.TurnID)
			}
			c.arrive(id, i, r.At)
		}
	}

	// Web: every event names its chunk; replays after a reconnect are not
	// arrivals.
	seen := map[string]bool{}
	for i, ev := range c.o.Web {
		if ev.OutboxID == "" || seen[ev.OutboxID] {
			continue
		}
		seen[ev.OutboxID] = true
		if _, ok := c.entries[ev.OutboxID]; !ok {
			c.fail("delivered", "the web client saw %s, which the outbox does not know", ev.OutboxID)
			continue
		}
		c.arrive(ev.OutboxID, i, time.Time{})
	}

	c.fig.Receipts = len(c.first)
	for id, e := range delivered {
		if _, ok := c.first[id]; ok {
			continue
		}
		switch e.Target.Label() {
		case "telegram", "discord", "web":
			if e.Target.Label() == "web" && c.webMirrorCut(id) {
				continue
			}
			c.fail("delivered", "%s is delivered according to the outbox (platform message %q) but %s never received it", id, e.PlatformMessageID, e.Target.Label())
		}
	}
}

// webMirrorCut reports whether a web chunk may have been missed by the web
// client for a reason the hub cannot help: it was published while the
// client was reconnecting and its mirror record, which replays it after a
// restart, was cut off.
func (c *checker) webMirrorCut(id string) bool {
	for _, r := range c.o.Outbound {
		if r.Meta[store.MetaOutboxID] == id {
			return false
		}
	}
	return len(c.o.Kills) > 0 || len(c.o.MirrorFaults) > 0
}

// twin finds the outbox id of an unknown arrival i: that of the next known
// arrival that is the same (the chunk sent again), else of the nearest
// earlier one; "" when there is none.
func twin(n, i int, ids []string, same func(j int) bool) string {
	for j := i + 1; j < n; j++ {
		if ids[j] != "" && same(j) {
			return ids[j]
		}
	}
	for j := i - 1; j >= 0; j-- {
		if ids[j] != "" && same(j) {
			return ids[j]
		}
	}
	return ""
}

// isProgress reports whether a text is a progress message of a long call
// (hub.ProgressView, on Telegram and Discord): its own message, edited in
// place and finalised, never a chunk.
func isProgress(s string) bool {
	switch {
	case strings.HasPrefix(s, "⏳ "), strings.HasPrefix(s, "✖ ") && strings.Contains(s, " was cancelled by "),
		strings.HasPrefix(s, "⚠ The hub restarted while ") && strings.HasSuffix(s, "; it did not finish here."):
		return true
	case strings.HasPrefix(s, "✓ ") && strings.HasSuffix(s, "; its result follows."),
		strings.HasPrefix(s, "⚠ ") && strings.HasSuffix(s, "; the details follow.") && strings.Contains(s, " ended with an error after "):
		return true
	}
	return false
}

func isAdapterNotice(s string) bool {
	for _, n := range adapterNotices {
		if strings.HasPrefix(s, n) {
			return true
		}
	}
	return false
}

// checkDuplicates allows one repeated arrival per target per SIGKILL, and
// per cut of its platform's connections.
func (c *checker) checkDuplicates() {
	for target, n := range c.extra {
		allowed := len(c.o.Kills) + c.o.Cuts[platformOf(target)]
		c.fig.CrashDuplicates += n
		c.fig.CrashDuplicatesByTarget[target] = n
		if n > allowed {
			var ids []string
			for id, k := range c.arrivals {
				if k > 1 && c.entries[id].Target.String() == target {
					ids = append(ids, fmt.Sprintf("%s ×%d", id, k))
				}
			}
			sort.Strings(ids)
			c.fail("no duplicates", "target %s received %d repeated chunks with %d SIGKILLs and %d cuts of its platform (at most one per target per kill or cut): %s",
				target, n, len(c.o.Kills), c.o.Cuts[platformOf(target)], strings.Join(ids, ", "))
		}
	}
}

// checkOrder: per target, a turn's chunks arrive in index order and
// together; an ordered source's turns are answered in the order sent.
func (c *checker) checkOrder() {
	byTarget := map[string][]receipt{}
	for _, r := range c.recv {
		byTarget[r.target] = append(byTarget[r.target], r)
	}
	for target, rs := range byTarget {
		sort.SliceStable(rs, func(i, j int) bool { return rs[i].pos < rs[j].pos })
		type span struct {
			kind       outbox.Kind
			first, end int
			lastIndex  int
		}
		spans := map[string]*span{} // turn id + kind → where its chunks were
		for i, r := range rs {
			e := c.entries[r.id]
			key := e.TurnID + "|" + string(e.Kind)
			s := spans[key]
			if s == nil {
				spans[key] = &span{kind: e.Kind, first: i, end: i, lastIndex: e.Index}
				continue
			}
			if e.Index <= s.lastIndex {
				c.fail("order", "target %s: chunk %d of %s arrived after chunk %d", target, e.Index, e.TurnID, s.lastIndex)
			}
			s.lastIndex, s.end = e.Index, i
		}
		for key, s := range spans {
			for i := s.first; i <= s.end; i++ {
				e := c.entries[rs[i].id]
				if e.TurnID+"|"+string(e.Kind) != key {
					c.fail("order", "target %s: %s arrived between the chunks of %s", target, rs[i].id, strings.TrimSuffix(key, "|"+string(s.kind)))
					break
				}
			}
		}
		// Ordered sources: turns answered in the order sent.
		bySource := map[string][]*Turn{}
		firstPos := map[string]int{}
		for i, r := range rs {
			e := c.entries[r.id]
			t := c.turnByID[e.TurnID]
			if t == nil || !t.Ordered {
				continue
			}
			if _, ok := firstPos[t.TurnID]; !ok {
				firstPos[t.TurnID] = i
				bySource[t.Source] = append(bySource[t.Source], t)
			}
		}
		for src, ts := range bySource {
			sort.Slice(ts, func(i, j int) bool { return ts[i].Seq < ts[j].Seq })
			for i := 1; i < len(ts); i++ {
				if firstPos[ts[i].TurnID] < firstPos[ts[i-1].TurnID] {
					c.fail("order", "%s: the answer to %s (sent after %s) arrived first", src, ts[i].TurnID, ts[i-1].TurnID)
				}
			}
		}
	}
}

// lostInCrash reports whether a Discord turn may have died with a hub that
// was killed or stopped after it was sent: Discord does not deliver a
// gateway event again, and a stopping hub takes no new turns.
func (c *checker) lostInCrash(t *Turn) bool {
	if t.Platform != "discord" {
		return false
	}
	for _, k := range slices.Concat(c.o.Kills, c.o.Stops) {
		if !k.Before(t.Sent) {
			return true
		}
	}
	return false
}

// inMirrorFault reports whether t falls into a mirror fault window.
func (c *checker) inMirrorFault(t time.Time) bool {
	for _, w := range c.o.MirrorFaults {
		if w.holds(t) {
			return true
		}
	}
	return false
}

// checkAnswers: every delivered turn has exactly one answer (its reply or
// a restart notice); a stranger is answered at most once.
func (c *checker) checkAnswers() {
	inbound := c.inboundTurns()
	strangers := map[string]int{}
	for i := range c.o.Turns {
		t := &c.o.Turns[i]
		kinds := map[outbox.Kind]bool{}
		for _, id := range c.byTurn[t.TurnID] {
			e := c.entries[id]
			if e.State != outbox.StatePending {
				kinds[e.Kind] = true
			}
		}
		if kinds[outbox.KindReply] && kinds[outbox.KindNotice] {
			c.fail("answered", "%s got both a reply and a restart notice", t.TurnID)
		}
		answered := len(kinds) > 0
		if answered {
			c.fig.Answered++
		}
		if t.Stranger {
			if answered {
				strangers[t.Identity]++
			}
			continue
		}
		if !t.Delivered || answered {
			continue
		}
		switch {
		case c.lostInCrash(t) && !inbound[t.TurnID]:
			c.fig.DiscordLostInCrash++
		case c.o.Expect.MirrorGaps == "allowed_during_fault" && t.Platform == "discord" && !inbound[t.TurnID] && c.inMirrorFault(t.Sent):
			// Not recorded, so not run; Discord does not deliver it again.
		default:
			c.fail("answered", "%s (%s %s, sent %s) reached the hub but got no answer", t.TurnID, t.Platform, t.Action, t.Sent.Format("15:04:05.000"))
		}
	}
	for id, n := range strangers {
		if n > 1 {
			c.fail("answered", "stranger %s was answered %d times (at most once an hour)", id, n)
		}
	}
}

// inboundTurns returns the turn ids in the inbound mirror.
func (c *checker) inboundTurns() map[string]bool {
	out := map[string]bool{}
	for _, r := range c.o.Inbound {
		if id := r.Meta["turn_id"]; id != "" {
			out[id] = true
		}
	}
	return out
}

// checkMirrors: delivered turns are in the inbound mirror; delivered and
// dead chunks in the outbound mirror, as what they are.
func (c *checker) checkMirrors() {
	inbound := c.inboundTurns()
	for i := range c.o.Turns {
		t := &c.o.Turns[i]
		if !t.Delivered || inbound[t.TurnID] {
			continue
		}
		switch {
		case c.lostInCrash(t):
			// A Discord event is not delivered again: a kill between the
			// turn's ledger record and its mirror record leaves it answered
			// (with the restart notice) but not mirrored.
			if len(c.byTurn[t.TurnID]) > 0 {
				c.fig.InboundGapsInCrash++
			}
		case c.o.Expect.MirrorGaps == "allowed_during_fault" && c.inMirrorFault(t.Sent) && t.Platform == "discord":
			c.fig.InboundGapsInFault++
			if len(c.byTurn[t.TurnID]) > 0 && c.repliedAsRun(t) {
				c.fail("mirrored", "%s is missing from the inbound mirror but ran", t.TurnID)
			}
		default:
			c.fail("mirrored", "%s reached the hub but is not in the inbound mirror", t.TurnID)
		}
	}

	out := map[string][]store.MirrorRecord{}
	for _, r := range c.o.Outbound {
		if r.Kind == "result" {
			continue // a call's outcome (an API call, a schedule's run), not a chunk
		}
		id := r.Meta[store.MetaOutboxID]
		if id == "" {
			c.fail("mirrored", "an outbound mirror record has no outbox id: %q", preview(r.Text))
			continue
		}
		out[id] = append(out[id], r)
		if _, ok := c.entries[id]; !ok {
			c.fail("mirrored", "the outbound mirror records %s, which the outbox does not know", id)
		}
	}
	gapsByTarget := map[string]int{}
	check := func(e outbox.Entry, want string) {
		recs := out[e.ID]
		for _, r := range recs {
			if r.Kind == want {
				return
			}
		}
		if len(recs) > 0 {
			c.fail("mirrored", "%s is %s but the outbound mirror records it as %q", e.ID, e.State, recs[0].Kind)
			return
		}
		if c.o.Expect.MirrorGaps == "allowed_during_fault" && c.inMirrorFault(e.DeliveredAt) {
			c.fig.MirrorGapsInFault++
			return
		}
		e2 := c.entries[e.ID]
		gapsByTarget[e2.Target.String()]++
	}
	for _, e := range c.o.Delivered {
		check(c.entries[e.ID], string(c.entries[e.ID].Kind))
	}
	for _, e := range c.o.Dead {
		check(c.entries[e.ID], store.KindDead)
	}
	for target, n := range gapsByTarget {
		c.fig.MirrorGapsInCrash += n
		if n > len(c.o.Kills) {
			c.fail("mirrored", "target %s: %d delivered or dead chunks are missing from the outbound mirror (%d SIGKILLs could explain at most %d)", target, n, len(c.o.Kills), len(c.o.Kills))
		}
	}
}

// repliedAsRun reports whether t's answer is a reply (the verb ran), not
// a notice or nothing.
func (c *checker) repliedAsRun(t *Turn) bool {
	for _, id := range c.byTurn[t.TurnID] {
		if c.entries[id].Kind == outbox.KindReply {
			return true
		}
	}
	return false
}

// reportsResult reports whether t's answer is a reply that reports its
// verb's result: the verb ran to the end. A reply that reports the verb
// cancelled does not: a graceful stop ends the context of the turns in
// flight with the adapters', which kills a running program, and the hub
// then enqueues that outcome as the turn's reply ("⚠ sh was cancelled
// before it finished; … (cancelled)") rather than leave the
// turn unanswered. Such a reply claims nothing of the side effect: the
// program may have written its marker before it was killed, or not. The
// outbox keeps no text of a delivered chunk, so the text is the outbound
// mirror's; a chunk without a known text counts as a result.
func (c *checker) reportsResult(t *Turn) bool {
	for _, id := range c.byTurn[t.TurnID] {
		if e := c.entries[id]; e.Kind == outbox.KindReply && !cancelled(c.texts[id]) {
			return true
		}
	}
	return false
}

// cancelled reports whether a reply's text is the rendering of a verb's
// cancellation (executor.RenderError of a cancelled error).
func cancelled(text string) bool {
	first, _, _ := strings.Cut(text, "\n")
	return strings.HasPrefix(first, "⚠ ") && strings.HasSuffix(first, " ("+string(executor.CodeCanceled)+")")
}

// checkSideEffects: a marker appears at most once; exactly once when the
// turn's reply reports the verb's result.
func (c *checker) checkSideEffects() {
	for i := range c.o.Turns {
		t := &c.o.Turns[i]
		if t.MarkerFile == "" || t.Stranger {
			continue
		}
		n := 0
		for _, line := range strings.Split(c.o.Files[t.MarkerFile], "\n") {
			if strings.TrimSpace(line) == t.Marker {
				n++
			}
		}
		if n > 0 {
			c.fig.SideEffects++
		}
		switch {
		case n > 1:
			c.fail("at most once", "%s: marker %s appears %d times in %s", t.TurnID, t.Marker, n, t.MarkerFile)
		case n == 0 && c.reportsResult(t):
			c.fail("at most once", "%s was answered with its result but its marker %s is not in %s", t.TurnID, t.Marker, t.MarkerFile)
		case n == 1 && !t.Delivered:
			c.fail("at most once", "%s never reached the hub but its marker %s is in %s", t.TurnID, t.Marker, t.MarkerFile)
		}
	}
}

// checkAlive: the hub answered at the end and never panicked or raced.
func (c *checker) checkAlive() {
	if c.o.Alive != "" {
		c.fail("alive", "%s", c.o.Alive)
	}
	for i, log := range c.o.HubLogs {
		for _, bad := range []string{"WARNING: DATA RACE", "panic:", "fatal error:"} {
			if j := strings.Index(log, bad); j >= 0 {
				end := min(len(log), j+600)
				c.fail("alive", "hub run %d reported %q:\n%s", i+1, bad, log[j:end])
			}
		}
	}
}

// platformOf names the platform of a target key.
func platformOf(target string) string {
	switch {
	case target == "web":
		return "web"
	case strings.HasPrefix(target, "chat:telegram:"):
		return "telegram"
	case strings.HasPrefix(target, "chat:discord:"):
		return "discord"
	case strings.HasPrefix(target, "local:"):
		return "local"
	}
	return "unknown"
}

func preview(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 120 {
		return s[:120] + "…"
	}
	return s
}

// Summary is one line of figures.
func (f Figures) Summary() string {
	var dup []string
	for t, n := range f.CrashDuplicatesByTarget {
		if n > 0 {
			dup = append(dup, fmt.Sprintf("%s=%d", t, n))
		}
	}
	slices.Sort(dup)
	s := fmt.Sprintf("turns=%d delivered=%d answered=%d chunks=%d dead=%d received=%d crash_window_duplicates=%d nonce_repeats=%d side_effects=%d mirror_gaps_fault=%d mirror_gaps_crash=%d inbound_gaps_fault=%d inbound_gaps_crash=%d discord_lost_in_crash=%d duplicate_inbounds_sent=%d",
		f.Turns, f.TurnsDelivered, f.Answered, f.Chunks, f.Dead, f.Receipts, f.CrashDuplicates, f.NonceRepeats, f.SideEffects,
		f.MirrorGapsInFault, f.MirrorGapsInCrash, f.InboundGapsInFault, f.InboundGapsInCrash, f.DiscordLostInCrash, f.DuplicateSent)
	if f.Uploads > 0 || f.FileReplies > 0 {
		s += fmt.Sprintf(" uploads=%d file_replies_telegram=%d", f.Uploads, f.FileReplies)
	}
	if f.ConfirmRuns+f.ConfirmInterrupted+f.ConfirmCancels > 0 {
		s += fmt.Sprintf(" confirm_runs=%d confirm_interrupted=%d confirm_cancels=%d", f.ConfirmRuns, f.ConfirmInterrupted, f.ConfirmCancels)
	}
	if f.ScheduleRuns > 0 {
		s += fmt.Sprintf(" schedule_runs=%d schedule_results=%d schedule_ticks=%d schedule_notices=%d", f.ScheduleRuns, f.ScheduleResults, f.ScheduleTicks, f.ScheduleNotices)
	}
	if len(dup) > 0 {
		s += " (" + strings.Join(dup, " ") + ")"
	}
	return s
}
