package discord

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/store"
	"github.com/bwmarrin/discordgo"
)

func TestGatewaySessionAndCommands(t *testing.T) {
	e := newEnv(t, envOptions{})
	ids := e.fake.Identifies()
	if len(ids) != 1 {
		t.Fatalf("%d identifies, want 1", len(ids))
	}
	var id struct {
		Token   string `json:"token"`
		Intents int    `json:"intents"`
	}
	if err := json.Unmarshal([]byte(ids[0]), &id); err != nil {
		t.Fatal(err)
	}
	if id.Token != "Bot "+botToken {
		t.Errorf("identify token = %q", id.Token)
	}
	want := discordgo.IntentsGuilds | discordgo.IntentsGuildMessages | discordgo.IntentsDirectMessages | discordgo.IntentsMessageContent
	if discordgo.Intent(id.Intents) != want {
		t.Errorf("intents = %d, want %d", id.Intents, want)
	}
	// Heartbeats go out and the fake's ACKs come back.
	e.fake.WaitFor(e.t, "a heartbeat and its ACK", func() bool { return e.fake.Heartbeats() >= 1 && e.fake.Acks() >= 1 })

	// The commands were registered by bulk overwrite in the command guild,
	// exactly as CommandsJSON prints them.
	puts := e.fake.RequestsTo(http.MethodPut, "/applications/")
	if len(puts) != 1 || puts[0].Path != "/applications/"+e.fake.AppID+"/guilds/"+e.fake.GuildID+"/commands" {
		t.Fatalf("command registrations: %+v", puts)
	}
	printed, err := CommandsJSON(e.rt.Hub.Executor().Registry())
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	_ = json.Unmarshal(puts[0].Body, &a)
	_ = json.Unmarshal(printed, &b)
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Errorf("registered commands differ from CommandsJSON:\n%s", puts[0].Body)
	}
	if st := boardState(e); st != "running" {
		t.Errorf("board state = %q, want running", st)
	}
}

func boardState(e *testEnv) hub.State {
	for _, s := range e.rt.Board.All() {
		if s.Name == Name {
			return s.State
		}
	}
	return ""
}

func TestIntents(t *testing.T) {
	off, on := false, true
	base := discordgo.IntentsGuilds | discordgo.IntentsGuildMessages | discordgo.IntentsDirectMessages
	for _, tc := range []struct {
		cfg  config.Discord
		want discordgo.Intent
	}{
		{config.Discord{Mention: &off}, base},
		{config.Discord{Mention: &on}, base | discordgo.IntentsMessageContent},
		{config.Discord{Mention: &off, Prefix: "!"}, base | discordgo.IntentsMessageContent},
	} {
		if got := Intents(tc.cfg); got != tc.want {
			t.Errorf("Intents(mention=%v, prefix=%q) = %d, want %d", *tc.cfg.Mention, tc.cfg.Prefix, got, tc.want)
		}
	}
}

// bigFile writes a file that renders as several Discord chunks and holds
// ``` runs, so the hub fences it with four backticks.
func bigFile(t *testing.T, e *testEnv, name string, lines int) string {
	t.Helper()
	var b strings.Builder
	for i := 1; i <= lines; i++ {
		if i%10 == 0 {
			fmt.Fprintf(&b, "```inner fence %04d```\n", i)
		} else {
			fmt.Fprintf(&b, "line %04d of the big file, padded to a useful length\n", i)
		}
	}
	if err := os.WriteFile(filepath.Join(e.ws, name), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestInteractionRepliesEditThenFollowUp(t *testing.T) {
	e := newEnv(t, envOptions{})
	content := bigFile(t, e, "big.txt", 120) // ~6.3 kB: 4 chunks
	i := e.interact(adminUser, "fs", sub("read-file", str("path", "big.txt")))
	e.fake.WaitFor(e.t, "the last follow-up", func() bool { return len(e.fake.Followups(i.Token)) >= 3 })

	c, _ := e.fake.Callback(i.ID)
	if c.Type != 5 || c.Flags != 0 {
		t.Errorf("deferral = type %d flags %d, want a public deferral (5, 0)", c.Type, c.Flags)
	}
	var order []string
	for _, r := range e.fake.RequestsTo("", "/") {
		if strings.Contains(r.Path, i.Token) {
			order = append(order, r.Method+" "+strings.TrimPrefix(strings.SplitN(r.Path, i.Token, 2)[1], "/"))
		}
	}
	if got := strings.Join(order, ", "); got != "POST callback, PATCH messages/@original, POST , POST , POST " {
		t.Errorf("requests in order: %s", got)
	}
	chunks := []string{c.Original.Content}
	for _, f := range e.fake.Followups(i.Token) {
		chunks = append(chunks, f.Content)
	}
	var joined strings.Builder
	for n, ch := range chunks {
		if len([]rune(ch)) > 2000 {
			t.Errorf("chunk %d has %d characters", n, len([]rune(ch)))
		}
		if strings.Contains(ch, "````") {
			t.Errorf("chunk %d still has a four-backtick fence", n)
		}
		start := strings.Index(ch, "```\n")
		end := strings.LastIndex(ch, "\n```")
		if start < 0 || end <= start {
			t.Fatalf("chunk %d is not a ``` code block: %q", n, ch)
		}
		inner := ch[start+4 : end]
		if strings.Contains(inner, "```") {
			t.Errorf("chunk %d: a ``` run inside the block would end it early", n)
		}
		joined.WriteString(strings.ReplaceAll(inner, zwsp, "") + "\n")
	}
	if !strings.Contains(joined.String(), "line 0001 of the big file") || !strings.Contains(joined.String(), "```inner fence 0120```") {
		t.Errorf("the chunks do not carry the file")
	}
	// In order: each line number appears after the previous one.
	at := 0
	for n := 1; n <= 120; n++ {
		needle := fmt.Sprintf("%04d", n)
		k := strings.Index(joined.String()[at:], needle)
		if k < 0 {
			t.Fatalf("line %d missing or out of order", n)
		}
		at += k
	}
	_ = content
	if n := len(e.fake.ChannelMessages(i.Channel)); n != 0 {
		t.Errorf("%d channel messages, want none", n)
	}
	assertNoMentions(t, e.fake)
}

// TestInteractionOverflowIsAnAttachment: a long output arrives as its head
// and the whole output attached. (A long file read whole goes as the file
// itself: TestFileReplyIsAttachedOnce.)
func TestInteractionOverflowIsAnAttachment(t *testing.T) {
	e := newEnv(t, envOptions{})
	content := bigFile(t, e, "huge.txt", 400) // ~21 kB: beyond the overflow threshold
	i := e.interact(adminUser, "fs", sub("read-range", str("path", "huge.txt"), integer("start-line", 1), integer("end-line", 400)))
	e.fake.WaitFor(e.t, "the attachment follow-up", func() bool { return len(e.fake.Followups(i.Token)) >= 1 })
	orig := e.waitOriginal(i)
	if !strings.Contains(orig.Content, "line 0001") {
		t.Errorf("head chunk = %q", orig.Content)
	}
	fu := e.fake.Followups(i.Token)
	var file []byte
	for _, f := range fu[0].Files {
		file = f
	}
	if !strings.Contains(string(file), "1: line 0001 of the big file") || !strings.Contains(string(file), "inner fence 0400") || len(file) < len(content) {
		t.Errorf("the attachment does not hold the whole output (%d bytes)", len(file))
	}
}

func TestInteractionDuplicateRunsOnce(t *testing.T) {
	e := newEnv(t, envOptions{})
	log := filepath.Join(e.ws, "log.txt")
	if err := os.WriteFile(log, []byte("start\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	i := interaction{ID: e.nextID(), Channel: e.fake.ChannelID, Guild: e.fake.GuildID, User: adminUser, Command: "fs",
		Options: []opt{sub("write-range", str("path", "log.txt"), integer("start-line", 2), str("content", "appended"))}}
	i.Token = "itok-" + i.ID
	payload := e.fake.InteractionPayload(i)
	e.fake.Dispatch("INTERACTION_CREATE", payload)
	e.fake.Dispatch("INTERACTION_CREATE", payload) // the gateway delivers it again
	orig := e.waitOriginal(i)
	if !strings.Contains(orig.Content, "Updated") {
		t.Errorf("original = %q", orig.Content)
	}
	// A later event has been handled, so the repeat has too.
	w := e.interact(adminUser, "hub", sub("whoami"))
	e.waitOriginal(w)
	if n := len(e.fake.RequestsTo(http.MethodPost, "/interactions/"+i.ID+"/")); n != 1 {
		t.Errorf("%d deferrals, want 1", n)
	}

	// After a restart the same interaction arrives once more: Discord says
	// it was acknowledged, the hub's ledger says it ran; nothing runs.
	e.restart()
	e.fake.Dispatch("INTERACTION_CREATE", payload)
	e.waitMirror("the repeat seen by the hub", func(r store.MirrorRecord) bool {
		return r.Direction == store.DirectionInbound && r.MessageID == i.ID && r.Meta["duplicate"] != ""
	})
	e.stop() // waits for the turn in flight
	if st := boardState(e); st != "stopped" {
		t.Errorf("board state after Run returned = %q", st)
	}
	if n := len(e.fake.RequestsTo(http.MethodPost, "/interactions/"+i.ID+"/")); n != 2 {
		t.Errorf("%d deferrals, want 2 (one per adapter)", n)
	}
	data, _ := os.ReadFile(log)
	if string(data) != "start\nappended\n" {
		t.Errorf("log.txt = %q, want the line appended once", data)
	}
	if n := len(e.fake.RequestsTo(http.MethodPatch, "/webhooks/"+e.fake.AppID+"/"+i.Token)); n != 1 {
		t.Errorf("%d edits of the response, want 1", n)
	}
	// The mirror shows the command as typed and never the token.
	found := false
	e.readMirror(func(r store.MirrorRecord) {
		if strings.Contains(fmt.Sprint(r), i.Token) {
			t.Errorf("the mirror holds the interaction token: %+v", r)
		}
		if r.Direction == store.DirectionInbound && r.MessageID == i.ID && r.Meta["duplicate"] == "" {
			found = true
			if r.Meta["command"] != "/fs write-range path:log.txt start-line:2 content:appended" || !strings.Contains(r.Text, `"verb":"fs.writeRange"`) {
				t.Errorf("inbound mirror record: text %q, meta %v", r.Text, r.Meta)
			}
		}
	})
	if !found {
		t.Error("the interaction is not in the inbound mirror")
	}
}

func TestInteractionDenialsAndErrorsAreEphemeral(t *testing.T) {
	e := newEnv(t, envOptions{})
	for _, tc := range []struct {
		name      string
		user      string
		roles     []string
		command   string
		opts      []opt
		ephemeral bool   // the deferral
		original  string // part of the response
		followup  string // part of an ephemeral follow-up, if any
	}{
		{"stranger", strangerUser, nil, "fs", []opt{sub("exists", str("path", "README.md"))}, true, "does not know you. Your identity is discord:" + strangerUser, ""},
		{"stranger again within the hour", strangerUser, nil, "fs", []opt{sub("exists", str("path", "README.md"))}, true, "does not know you (discord:" + strangerUser + ")", ""},
		{"forbidden verb", readerUser, nil, "proc", []opt{sub("run", str("executable", "true"))}, true, "may not run proc.run", ""},
		{"does not parse", adminUser, nil, "fs", []opt{sub("move-file", str("source-path", "README.md"))}, true, "missing required argument", ""},
		{"fails at run time", adminUser, nil, "fs", []opt{sub("read-file", str("path", "missing.txt"))}, false, privateNotice, "missing.txt"},
		{"allowed", readerUser, nil, "fs", []opt{sub("exists", str("path", "README.md"))}, false, "exists", ""},
		{"builtin", strangerUser + "", nil, "hub", []opt{sub("whoami")}, true, "", ""},
		{"granted by a role", "700000000000000055", []string{"710000000000000077", opsRole}, "proc", []opt{sub("run", str("executable", "true"))}, false, "exit 0", ""},
		{"role without a grant", "700000000000000056", []string{"710000000000000077"}, "fs", []opt{sub("exists", str("path", "x"))}, true, "does not know you", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			i := e.interactWithRoles(tc.user, tc.roles, tc.command, tc.opts...)
			if tc.original == "" {
				// A stranger's built-in is a denial the hub already sent
				// within the hour: the deferral is closed briefly.
				tc.original = "does not know you"
			}
			orig := e.waitOriginal(i)
			c, _ := e.fake.Callback(i.ID)
			if got := c.Flags == flagEphemeral; got != tc.ephemeral {
				t.Errorf("deferral ephemeral = %v, want %v", got, tc.ephemeral)
			}
			if !strings.Contains(orig.Content, tc.original) {
				t.Errorf("response = %q, want it to contain %q", orig.Content, tc.original)
			}
			if tc.followup != "" {
				e.fake.WaitFor(e.t, "the ephemeral follow-up", func() bool { return len(e.fake.Followups(i.Token)) == 1 })
				fu := e.fake.Followups(i.Token)
				if fu[0].Flags != flagEphemeral || !strings.Contains(fu[0].Content, tc.followup) {
					t.Errorf("follow-up = %+v", fu[0])
				}
			}
		})
	}
}

func TestChannelMessages(t *testing.T) {
	e := newEnv(t, envOptions{})
	bot := e.fake.BotID
	ignored := []channelMsg{
		e.say(adminUser, "/fs.exists README.md"), // not addressed to the bot
		e.say(adminUser, "hello <@123> !fs.exists README.md"),
	}
	own := channelMsg{ID: e.nextID(), Channel: e.fake.ChannelID, Guild: e.fake.GuildID, User: bot, Content: "!fs.exists README.md"}
	e.fake.Dispatch("MESSAGE_CREATE", e.fake.MessagePayload(own))
	other := channelMsg{ID: e.nextID(), Channel: e.fake.ChannelID, Guild: e.fake.GuildID, User: "700000000000000099", Content: "!fs.exists README.md", Bot: true}
	e.fake.Dispatch("MESSAGE_CREATE", e.fake.MessagePayload(other))
	ignored = append(ignored, own, other)

	for _, tc := range []struct{ content, want string }{
		{"<@" + bot + "> /fs.exists README.md", "`README.md` exists."},
		{"<@!" + bot + "> fs.exists README.md", "`README.md` exists."},
		{"!fs.exists README.md", "`README.md` exists."},
		{"!whoami", "You are discord:" + adminUser},
		{"<@" + bot + ">", "Send a verb as a command"},
		{"!fs.readFile nope.txt", "nope.txt"},
	} {
		m := e.say(adminUser, tc.content)
		r := e.waitReply(m)
		if !strings.Contains(r.Content, tc.want) {
			t.Errorf("%q → %q, want it to contain %q", tc.content, r.Content, tc.want)
		}
		if r.Nonce == "" {
			t.Errorf("%q: reply without a nonce", tc.content)
		}
	}
	e.stop() // every turn handed to the hub has finished
	for _, m := range ignored {
		rec, err := e.rt.Ledger.Get("discord." + m.Channel + "." + m.ID)
		if err != nil || rec != nil {
			t.Errorf("message %q became a turn (%v, %v)", m.Content, rec, err)
		}
	}
	assertNoMentions(t, e.fake)
}

func TestGatewayResume(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.fake.WaitFor(e.t, "the first heartbeat", func() bool { return e.fake.Heartbeats() >= 1 })
	e.fake.DropConnection()
	// Dispatched while the client is away: the fake keeps it for the resume.
	i := e.interact(adminUser, "fs", sub("exists", str("path", "README.md")))
	orig := e.waitOriginal(i)
	if !strings.Contains(orig.Content, "exists") {
		t.Errorf("original = %q", orig.Content)
	}
	resumes, identifies := e.fake.Resumes(), len(e.fake.Identifies())
	if resumes != 1 || identifies != 1 {
		t.Errorf("resumes = %d, identifies = %d; want the session resumed, not identified again", resumes, identifies)
	}
	e.fake.WaitFor(e.t, "a heartbeat on the resumed connection", func() bool { return e.fake.Acks() >= 2 })
	if st := boardState(e); st != "running" {
		t.Errorf("board state = %q after the resume", st)
	}
}

func TestPlacesServed(t *testing.T) {
	const guild, other, ch, ch2 = "800000000000000001", "800000000000000002", "810000000000000001", "810000000000000002"
	for _, tc := range []struct {
		guilds, channels []string
		guild, channel   string
		want             bool
	}{
		{nil, nil, guild, ch, true},
		{[]string{guild}, nil, guild, ch, true},
		{[]string{guild}, nil, other, ch, false},
		{[]string{guild}, nil, "", ch, true}, // a direct message has no guild
		{nil, []string{ch}, guild, ch, true},
		{nil, []string{ch}, guild, ch2, false},
		{nil, []string{ch}, "", ch2, false},
		{[]string{guild}, []string{ch}, other, ch, false},
	} {
		a := &Adapter{cfg: config.Discord{AllowedGuilds: tc.guilds, AllowedChannels: tc.channels}}
		a.session, _ = discordgo.New("Bot x")
		if got := a.allowedPlace(tc.guild, tc.channel); got != tc.want {
			t.Errorf("guilds %v channels %v: allowedPlace(%s, %s) = %v", tc.guilds, tc.channels, tc.guild, tc.channel, got)
		}
	}

	// An interaction from a channel the hub does not serve gets an
	// ephemeral answer and never reaches the hub.
	e := newEnv(t, envOptions{discord: func(d *config.Discord) { d.AllowedChannels = []string{"810000000000000009"} }})
	i := e.interact(adminUser, "fs", sub("exists", str("path", "README.md")))
	c := e.waitOriginal(i)
	cb, _ := e.fake.Callback(i.ID)
	if cb.Type != 4 || cb.Flags != flagEphemeral || !strings.Contains(c.Content, "does not serve") {
		t.Errorf("callback = %+v, content %q", cb, c.Content)
	}
	e.stop()
	if rec, _ := e.rt.Ledger.Get("discord.i." + i.ID); rec != nil {
		t.Errorf("the interaction became a turn")
	}
}

// TestDeferralBeatsSlowVerb is the requirement itself: a verb that takes
// 10 s is deferred within Discord's 3-second window, and so is a second
// interaction that has to wait for a free slot.
func TestDeferralBeatsSlowVerb(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short: the verb takes 10 s")
	}
	e := newEnv(t, envOptions{concurrency: 1})
	sent := time.Now()
	slow := e.interact(adminUser, "proc", sub("run", str("executable", "sleep"), str("arguments", "10")))
	sent2 := time.Now()
	quick := e.interact(adminUser, "hub", sub("whoami"))
	e.fake.WaitFor(e.t, "both deferrals", func() bool {
		_, ok1 := e.fake.Callback(slow.ID)
		_, ok2 := e.fake.Callback(quick.ID)
		return ok1 && ok2
	})
	c1, _ := e.fake.Callback(slow.ID)
	c2, _ := e.fake.Callback(quick.ID)
	if d := c1.At.Sub(sent); d >= 3*time.Second {
		t.Errorf("the slow verb's deferral took %v, over Discord's 3 s window", d)
	}
	if d := c2.At.Sub(sent2); d >= 3*time.Second {
		t.Errorf("the waiting interaction's deferral took %v, over Discord's 3 s window", d)
	}
	orig := e.waitOriginal(slow)
	if !strings.Contains(orig.Content, "exit") && !strings.Contains(orig.Content, "sleep") {
		t.Errorf("slow verb's answer = %q", orig.Content)
	}
	e.waitOriginal(quick)
}

func TestBadTokenStopsRun(t *testing.T) {
	e := newEnv(t, envOptions{noRun: true, discord: func(d *config.Discord) { d.Token = config.NewSecret("wrong-token") }})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := e.ad.Run(ctx)
	if err == nil || !strings.Contains(err.Error(), "authentication failed") {
		t.Fatalf("Run = %v, want an authentication error", err)
	}
	if strings.Contains(err.Error(), "wrong-token") {
		t.Errorf("the error shows the token: %v", err)
	}
	if st := boardState(e); st != "stopped" {
		t.Errorf("board state = %q, want stopped", st)
	}
}

// TestChannelMessagesRunInOrder: the turns of one channel run in the order
// the messages were sent, although turns may run in parallel: each message
// appends the line its predecessor's line number depends on.
func TestChannelMessagesRunInOrder(t *testing.T) {
	e := newEnv(t, envOptions{concurrency: 8})
	if err := os.WriteFile(filepath.Join(e.ws, "seq.txt"), []byte("start\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var msgs []channelMsg
	for n := 2; n <= 9; n++ {
		msgs = append(msgs, e.say(adminUser, fmt.Sprintf("!fs.writeRange seq.txt %d line%d", n, n)))
	}
	for _, m := range msgs {
		if r := e.waitReply(m); !strings.Contains(r.Content, "Updated") {
			t.Errorf("%q → %q", m.Content, r.Content)
		}
	}
	data, _ := os.ReadFile(filepath.Join(e.ws, "seq.txt"))
	if want := "start\nline2\nline3\nline4\nline5\nline6\nline7\nline8\nline9\n"; string(data) != want {
		t.Errorf("seq.txt = %q, want %q", data, want)
	}
}

func TestDirectMessages(t *testing.T) {
	e := newEnv(t, envOptions{})
	const dm = "960000000000000077"
	for _, tc := range []struct{ content, want string }{
		{"/fs.exists README.md", "`README.md` exists."},
		{"hello there", "Send a command such as"},
		{"!fs.exists README.md", "`README.md` exists."},
	} {
		m := channelMsg{ID: e.nextID(), Channel: dm, User: adminUser, Content: tc.content}
		e.fake.Dispatch("MESSAGE_CREATE", e.fake.MessagePayload(m))
		if r := e.waitReply(m); !strings.Contains(r.Content, tc.want) {
			t.Errorf("%q → %q, want %q", tc.content, r.Content, tc.want)
		}
	}
	i := interaction{ID: e.nextID(), Channel: dm, User: adminUser, Command: "fs", Options: []opt{sub("exists", str("path", "README.md"))}}
	i.Token = "itok-" + i.ID
	e.fake.Dispatch("INTERACTION_CREATE", e.fake.InteractionPayload(i))
	if orig := e.waitOriginal(i); !strings.Contains(orig.Content, "exists") {
		t.Errorf("original = %q", orig.Content)
	}
	e.stop()
	rec, err := e.rt.Ledger.Get("discord.i." + i.ID)
	if err != nil || rec == nil || rec.Identity != "discord:"+adminUser || rec.Reply != "chat:discord:"+dm {
		t.Errorf("ledger record = %+v, %v", rec, err)
	}
}

// TestTurnTheHubCannotRecordIsRetried: while the hub cannot record a turn
// (its mirror disk is full), the interaction stays deferred instead of
// being told it failed, and runs, once, as soon as the hub can record it.
func TestTurnTheHubCannotRecordIsRetried(t *testing.T) {
	var full atomic.Bool
	e := newEnv(t, envOptions{mirrorFull: &full})
	log := filepath.Join(e.ws, "log.txt")
	if err := os.WriteFile(log, []byte("start\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	full.Store(true)
	i := e.interact(adminUser, "fs", sub("write-range", str("path", "log.txt"), integer("start-line", 2), str("content", "ran")))
	e.fake.WaitFor(t, "the adapter to report that the hub cannot record the turn", func() bool {
		for _, s := range e.rt.Board.All() {
			if s.Name == "discord" && s.State == "degraded" && strings.Contains(s.Detail, "could not record") {
				return true
			}
		}
		return false
	})
	if c, ok := e.fake.Callback(i.ID); !ok || c.Type != 5 {
		t.Fatalf("the interaction was not deferred: %+v", c)
	} else if c.Original != nil {
		t.Fatalf("the deferred response was edited while the turn could not run: %q", c.Original.Content)
	}
	if data, _ := os.ReadFile(log); string(data) != "start\n" {
		t.Fatalf("the verb ran while its turn could not be recorded: %q", data)
	}
	full.Store(false)
	if orig := e.waitOriginal(i); !strings.Contains(orig.Content, "Updated") {
		t.Errorf("original = %q, want the verb's result", orig.Content)
	}
	if data, _ := os.ReadFile(log); string(data) != "start\nran\n" {
		t.Errorf("log.txt = %q, want the line written once", data)
	}
}
