package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/clock"
)

var t0 = time.Date(2026, 2, 26, 9, 55, 0, 0, time.UTC)

func openDir(t *testing.T, path string, opts DirectoryOptions) (*Directory, *clock.Fake) {
	t.Helper()
	fake := clock.NewFake(t0)
	if opts.Clock == nil {
		opts.Clock = fake
	}
	d, err := openDirectoryAt(t, path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d, fake
}

func tgEntry(chatID, threadID, display string, seen time.Time) DirectoryEntry {
	return DirectoryEntry{Platform: chat.Telegram, ChatID: chatID, ThreadID: threadID, Display: display, SeenAt: seen}
}

func TestDirectoryFlushesAtMostOncePerInterval(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chat", "channel_directory.json")
	d, fake := openDir(t, path, DirectoryOptions{FlushInterval: time.Second})

	// A burst of 10,000 upserts at one instant: nothing until the interval.
	for i := range 10000 {
		d.Upsert(tgEntry(fmt.Sprint(-1000-i%50), "", fmt.Sprint("chat ", i), time.Time{}))
	}
	if n := d.writes.Load(); n != 0 {
		t.Fatalf("%d writes before the interval passed", n)
	}
	if fake.Pending() != 1 {
		t.Fatalf("%d timers armed for a burst, want 1", fake.Pending())
	}
	fake.Advance(999 * time.Millisecond)
	if n := d.writes.Load(); n != 0 {
		t.Fatalf("%d writes before the interval passed", n)
	}
	fake.Advance(time.Millisecond)
	if n := d.writes.Load(); n != 1 {
		t.Fatalf("%d writes after one interval, want 1", n)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}

	// Quiet: no more writes, no timer.
	fake.Advance(10 * time.Second)
	if n := d.writes.Load(); n != 1 || fake.Pending() != 0 {
		t.Fatalf("quiet period: %d writes, %d timers", n, fake.Pending())
	}

	// Steady traffic for 5s, an upsert every 10ms: one write per interval.
	for range 500 {
		d.Upsert(tgEntry("-7", "", "steady", time.Time{}))
		fake.Advance(10 * time.Millisecond)
	}
	if n := d.writes.Load(); n < 1+4 || n > 1+5 {
		t.Errorf("%d writes for 5s of traffic at a 1s interval, want 4 or 5 more than 1", n)
	}
	// An unchanged entry seen again within the same second is not a change.
	before := d.writes.Load()
	d.Upsert(tgEntry("-7", "", "steady", fake.Now()))
	d.Upsert(tgEntry("-7", "", "steady", fake.Now()))
	fake.Advance(time.Second)
	if n := d.writes.Load(); n > before+1 {
		t.Errorf("%d writes for repeats", n-before)
	}

	d.Upsert(tgEntry("-8", "", "last", time.Time{}))
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if fake.Pending() != 0 {
		t.Errorf("Close left %d timers armed", fake.Pending())
	}
	re, err := openDirectoryAt(t, path, DirectoryOptions{Clock: fake})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := re.Get(chat.ChannelKey{Platform: chat.Telegram, ChatID: "-8"}); !ok {
		t.Error("Close did not flush the last upsert")
	}
	if re.Len() != 52 {
		t.Errorf("reloaded %d entries, want 52", re.Len())
	}
}

func TestDirectoryEvictsOldest(t *testing.T) {
	d, _ := openDir(t, filepath.Join(t.TempDir(), "dir.json"), DirectoryOptions{MaxEntries: 3})
	for i := range 5 {
		d.Upsert(tgEntry(fmt.Sprint(i+1), "", "", t0.Add(time.Duration(i)*time.Minute)))
	}
	// Seeing chat 3 again makes it the newest, so 4 goes next.
	d.Upsert(tgEntry("3", "", "", t0.Add(10*time.Minute)))
	d.Upsert(tgEntry("6", "", "", t0.Add(11*time.Minute)))
	var ids []string
	for _, e := range d.List("") {
		ids = append(ids, e.ChatID)
	}
	if want := []string{"6", "3", "5"}; !slices.Equal(ids, want) {
		t.Errorf("kept %v, want %v (newest first)", ids, want)
	}
	// An entry older than everything is evicted at once.
	d.Upsert(tgEntry("9", "", "", t0.Add(-time.Hour)))
	if _, ok := d.Get(chat.ChannelKey{Platform: chat.Telegram, ChatID: "9"}); ok || d.Len() != 3 {
		t.Errorf("an ancient entry displaced a newer one")
	}
}

func TestDirectoryList(t *testing.T) {
	d, _ := openDir(t, filepath.Join(t.TempDir(), "dir.json"), DirectoryOptions{})
	d.Upsert(DirectoryEntry{Platform: chat.Telegram, ChatID: "-100123", ThreadID: "456", Display: "My Group / Releases", SeenAt: t0, Meta: map[string]string{"chat_type": "supergroup"}})
	d.Upsert(DirectoryEntry{Platform: chat.Discord, ChatID: "987654321", Display: "HQ / #general", SeenAt: t0.Add(time.Minute), Meta: map[string]string{"guild_id": "555"}})
	d.Upsert(DirectoryEntry{Platform: chat.Telegram, ChatID: "42", Display: "Alice", SeenAt: t0.Add(2 * time.Minute), Meta: map[string]string{"chat_type": "private"}})
	tests := []struct {
		query string
		want  []string
	}{
		{"", []string{"telegram:42", "discord:987654321", "telegram:-100123:456"}},
		{"DISCORD", []string{"discord:987654321"}},
		{"releases", []string{"telegram:-100123:456"}},
		{"supergroup", []string{"telegram:-100123:456"}},
		{"555", []string{"discord:987654321"}},
		{"-100123:4", []string{"telegram:-100123:456"}},
		{"telegram", []string{"telegram:42", "telegram:-100123:456"}},
		{"  alice ", []string{"telegram:42"}},
		{"nothing matches", nil},
	}
	for _, tt := range tests {
		var got []string
		for _, e := range d.List(tt.query) {
			got = append(got, e.Key().String())
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("List(%q) = %v, want %v", tt.query, got, tt.want)
		}
	}
	// Results are copies.
	d.List("alice")[0].Meta["chat_type"] = "changed"
	if e, _ := d.Get(chat.ChannelKey{Platform: chat.Telegram, ChatID: "42"}); e.Meta["chat_type"] != "private" {
		t.Error("List handed out its internal map")
	}
}

func TestDirectoryObserve(t *testing.T) {
	logger, logs := logTo()
	d, fake := openDir(t, filepath.Join(t.TempDir(), "dir.json"), DirectoryOptions{Logger: logger})
	topic := &chat.Inbound{Platform: chat.Telegram, ChatID: "-100123", ThreadID: "456", ChatType: "supergroup", ChatTitle: "My Group", TopicTitle: "Topic", Text: "hi"}
	d.Observe(topic)
	key := topic.Channel()
	e, ok := d.Get(key)
	if !ok {
		t.Fatal("not observed")
	}
	if e.Display != "My Group / Topic" || e.Meta["chat_type"] != "supergroup" || e.Meta["topic_title"] != "Topic" || !e.SeenAt.Equal(t0) {
		t.Errorf("entry %+v", e)
	}
	if _, has := e.Meta["chat_title"]; has {
		t.Error("chat_title leaked into meta")
	}

	// Later messages in the topic do not repeat its title; keep it.
	fake.Advance(time.Minute)
	d.Observe(&chat.Inbound{Platform: chat.Telegram, ChatID: "-100123", ThreadID: "456", ChatType: "supergroup", ChatTitle: "My Group"})
	if e, _ := d.Get(key); e.Display != "My Group / Topic" || !e.SeenAt.Equal(t0.Add(time.Minute)) {
		t.Errorf("after an untitled message: %+v", e)
	}
	// A renamed group shows its new name.
	d.Observe(&chat.Inbound{Platform: chat.Telegram, ChatID: "-100123", ThreadID: "456", ChatTitle: "Renamed"})
	if e, _ := d.Get(key); e.Display != "Renamed / Topic" {
		t.Errorf("after a rename: %q", e.Display)
	}

	d.Observe(&chat.Inbound{Platform: chat.Discord, ChatID: "987654321", GuildID: "123456", ChatType: "guild_text", ChatTitle: "CAR HQ", TopicTitle: "#general"})
	if e, _ := d.Get(chat.ChannelKey{Platform: chat.Discord, ChatID: "987654321"}); e.Display != "CAR HQ / #general" || e.Meta["guild_id"] != "123456" {
		t.Errorf("discord entry %+v", e)
	}
	d.Observe(&chat.Inbound{Platform: chat.Telegram, ChatID: "77"})
	if e, _ := d.Get(chat.ChannelKey{Platform: chat.Telegram, ChatID: "77"}); e.Display != "telegram:77" {
		t.Errorf("untitled chat displays as %q, want its key", e.Display)
	}

	n := d.Len()
	d.Observe(&chat.Inbound{Platform: chat.Web, ChatID: "w", Text: "hi"})
	d.Observe(nil)
	d.Observe(&chat.Inbound{Platform: chat.Telegram, ChatID: "not-a-number"})
	if !strings.Contains(logs.String(), "not an integer") {
		t.Errorf("the dropped entry was not logged:\n%s", logs)
	}
	if d.Len() != n {
		t.Errorf("web, nil or invalid inbound added entries")
	}
}

func TestDirectoryRename(t *testing.T) {
	logger, _ := logTo()
	d, _ := openDir(t, filepath.Join(t.TempDir(), "dir.json"), DirectoryOptions{Logger: logger})
	d.Upsert(DirectoryEntry{Platform: chat.Telegram, ChatID: "-123", Display: "Group", SeenAt: t0, Meta: map[string]string{"chat_type": "group"}})
	d.Upsert(tgEntry("-123", "5", "Group / T", t0))
	d.Upsert(tgEntry("-999", "", "Other", t0))
	// The supergroup has already been seen, more recently, without meta.
	d.Upsert(tgEntry("-100123", "", "Group", t0.Add(time.Minute)))
	from := chat.ChannelKey{Platform: chat.Telegram, ChatID: "-123"}
	to := chat.ChannelKey{Platform: chat.Telegram, ChatID: "-100123"}
	d.Rename(from, to)
	var keys []string
	for _, e := range d.List("") {
		keys = append(keys, e.Key().String())
	}
	slices.Sort(keys)
	if want := []string{"telegram:-100123", "telegram:-100123:5", "telegram:-999"}; !slices.Equal(keys, want) {
		t.Errorf("keys after rename %v, want %v", keys, want)
	}
	if e, _ := d.Get(to); !e.SeenAt.Equal(t0.Add(time.Minute)) || e.Meta["chat_type"] != "group" {
		t.Errorf("merged entry %+v: want the newer sighting with the older meta", e)
	}
	d.Rename(from, chat.ChannelKey{Platform: chat.Telegram, ChatID: "x"}) // invalid: ignored
	if d.Len() != 3 {
		t.Error("invalid rename changed the directory")
	}

	// A topic known only by its key is named by its new key after the move.
	d.Upsert(tgEntry("-77", "9", "", t0))
	if e, _ := d.Get(chat.ChannelKey{Platform: chat.Telegram, ChatID: "-77", ThreadID: "9"}); e.Display != "telegram:-77:9" {
		t.Fatalf("a topic without names is displayed as %q", e.Display)
	}
	d.Rename(chat.ChannelKey{Platform: chat.Telegram, ChatID: "-77"}, chat.ChannelKey{Platform: chat.Telegram, ChatID: "-10077"})
	if e, ok := d.Get(chat.ChannelKey{Platform: chat.Telegram, ChatID: "-10077", ThreadID: "9"}); !ok || e.Display != "telegram:-10077:9" {
		t.Errorf("moved topic: %+v, want it displayed as telegram:-10077:9", e)
	}
}

func TestDirectorySeedShape(t *testing.T) {
	seed, err := os.ReadFile("testdata/seed_channel_directory.json")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "channel_directory.json")
	if err := os.WriteFile(path, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	fake := clock.NewFake(time.Date(2026, 2, 26, 10, 0, 0, 0, time.UTC))
	d, err := openDirectoryAt(t, path, DirectoryOptions{Clock: fake})
	if err != nil {
		t.Fatal(err)
	}
	e, ok := d.Get(chat.ChannelKey{Platform: chat.Telegram, ChatID: "123", ThreadID: "456"})
	if !ok || e.Display != "My Group / Topic" || e.Meta["chat_type"] != "supergroup" || !e.SeenAt.Equal(t0) {
		t.Fatalf("seed entry %+v", e)
	}
	// Force a write of the unchanged content.
	d.mu.Lock()
	d.dirty = true
	d.mu.Unlock()
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	saved, _ := os.ReadFile(path)
	if !sameJSON(t, saved, seed, "entries") {
		t.Errorf("re-saved directory differs from the seed:\n%s", saved)
	}
	golden(t, "channel_directory.golden.json", saved)
}

func TestDirectoryCorruptFileUntouched(t *testing.T) {
	type tc struct {
		name      string
		content   string
		line, col int
	}
	var cases []tc
	for _, c := range corruptContents {
		cases = append(cases, tc{c.name, c.content, c.dLine, c.dCol})
	}
	cases = append(cases,
		tc{"bad seen_at", "{\"version\": 1, \"entries\": [\n  {\"platform\": \"telegram\", \"chat_id\": \"1\", \"seen_at\": \"yesterday\"}\n]}", 2, 3},
		tc{"bad platform", "{\"version\": 1, \"entries\": [\n  {\"platform\": \"telegram\", \"chat_id\": \"1\", \"seen_at\": \"2026-01-01T00:00:00Z\"},\n  {\"platform\": \"irc\", \"chat_id\": \"1\", \"seen_at\": \"2026-01-01T00:00:00Z\"}\n]}", 3, 3},
		tc{"meta not strings", "{\"version\": 1, \"entries\": [\n  {\"platform\": \"telegram\", \"chat_id\": \"1\", \"meta\": {\"n\": 1}}]}", 2, 58},
	)
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "chat", "channel_directory.json")
			unchanged := frozenFile(t, path, tt.content)
			_, err := openDirectoryAt(t, path, DirectoryOptions{})
			var ce *CorruptFileError
			if !errors.As(err, &ce) {
				t.Fatalf("got %v, want *CorruptFileError", err)
			}
			msg := err.Error()
			if want := fmt.Sprintf("%s:%d:%d", path, tt.line, tt.col); !strings.HasPrefix(msg, want) {
				t.Errorf("message %q does not start with %s", msg, want)
			}
			if !strings.Contains(msg, "left untouched") || !strings.Contains(msg, "rebuild") {
				t.Errorf("message %q does not say how to recover", msg)
			}
			unchanged()
		})
	}
}

func TestDirectoryCorruptedAfterOpenIsNotOverwritten(t *testing.T) {
	path := filepath.Join(t.TempDir(), "channel_directory.json")
	logger, logs := logTo()
	d, fake := openDir(t, path, DirectoryOptions{Logger: logger})
	d.Upsert(tgEntry("1", "", "one", time.Time{}))
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	unchanged := frozenFile(t, path, `{"version": 1, "entries": [{"platform": `)
	d.Upsert(tgEntry("2", "", "two", time.Time{}))
	fake.Advance(time.Second) // the scheduled flush fails and logs
	d.Upsert(tgEntry("3", "", "three", time.Time{}))
	fake.Advance(time.Second) // fails the same way: not logged again
	if n := strings.Count(logs.String(), "write failed"); n != 1 || !strings.Contains(logs.String(), path+":1:40") {
		t.Errorf("logged %d failures:\n%s", n, logs)
	}
	if err := d.Flush(); !errors.Is(err, ErrCorruptFile) {
		t.Errorf("Flush over a corrupted file: %v", err)
	}
	if err := d.Close(); !errors.Is(err, ErrCorruptFile) {
		t.Errorf("Close over a corrupted file: %v", err)
	}
	unchanged()
}

func TestDirectoryMergesOutsideChanges(t *testing.T) {
	path := filepath.Join(t.TempDir(), "channel_directory.json")
	d, _ := openDir(t, path, DirectoryOptions{})
	d.Upsert(tgEntry("1", "", "one", t0))
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	other, err := openDirectoryAt(t, path, DirectoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	other.Upsert(tgEntry("2", "", "two", t0))
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
	d.Upsert(tgEntry("3", "", "three", t0))
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	if d.Len() != 3 {
		t.Errorf("%d entries after merging another writer's file, want 3", d.Len())
	}
}

func TestDirectoryVersionTooNew(t *testing.T) {
	path := filepath.Join(t.TempDir(), "channel_directory.json")
	unchanged := frozenFile(t, path, `{"version": 9, "entries": []}`)
	if _, err := openDirectoryAt(t, path, DirectoryOptions{}); !errors.Is(err, ErrFileTooNew) {
		t.Errorf("got %v, want ErrFileTooNew", err)
	}
	unchanged()
}

func TestRebuildDirectory(t *testing.T) {
	root := t.TempDir()
	flows := filepath.Join(root, "flows")
	ctx := context.Background()
	fake := clock.NewFake(t0)
	write := func(runID string, ins ...*chat.Inbound) {
		m, err := OpenMirror(openRoot(t, flows), runID, MirrorOptions{Clock: fake})
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range ins {
			fake.Advance(time.Minute)
			if err := m.Append(ctx, InboundRecord(in, ""), false); err != nil {
				t.Fatal(err)
			}
		}
		// Outbound records never create entries.
		if err := m.Append(ctx, MirrorRecord{Direction: DirectionOutbound, Platform: "telegram", ChatID: "555"}, false); err != nil {
			t.Fatal(err)
		}
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
	}
	write("20260226T090000Z-aaaa",
		&chat.Inbound{Platform: chat.Telegram, ChatID: "-100123", ThreadID: "456", ChatType: "supergroup", ChatTitle: "Old Name", TopicTitle: "Topic"},
		&chat.Inbound{Platform: chat.Discord, ChatID: "987654321", GuildID: "123456", ChatTitle: "CAR HQ", TopicTitle: "#general"},
		&chat.Inbound{Platform: chat.Web, ChatID: "web", Text: "ignored"},
	)
	write("20260226T100000Z-bbbb",
		&chat.Inbound{Platform: chat.Telegram, ChatID: "-100123", ThreadID: "456", ChatType: "supergroup", ChatTitle: "My Group"},
		&chat.Inbound{Platform: chat.Telegram, ChatID: "42", ChatType: "private", ChatTitle: "Alice", Text: "denied", Meta: map[string]string{"interaction_token": "secret"}},
	)
	// A torn line in the middle of a run is skipped.
	inbound := filepath.Join(flows, "20260226T090000Z-aaaa", "chat", "inbound.jsonl")
	f, err := os.OpenFile(inbound, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("{\"ts\": \"2026-\n" + `{"ts":"2026-02-26T09:30:00Z","direction":"inbound","platform":"telegram","chat_id":"5"}` + "\n")
	f.Close()

	path := filepath.Join(root, "chat", "channel_directory.json")
	frozenFile(t, path, "this file is damaged")
	if _, err := openDirectoryAt(t, path, DirectoryOptions{}); err == nil {
		t.Fatal("the damaged directory opened")
	}
	logger, logs := logTo()
	pr, pn := rootFile(t, path)
	d, n, err := RebuildDirectory(pr, pn, openRoot(t, flows), DirectoryOptions{Clock: fake, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "skipped a bad mirror line") || !strings.Contains(logs.String(), "line=4") {
		t.Errorf("the torn mirror line was not reported:\n%s", logs)
	}
	defer d.Close()
	if n != 4 {
		t.Errorf("rebuilt %d entries, want 4", n)
	}
	e, _ := d.Get(chat.ChannelKey{Platform: chat.Telegram, ChatID: "-100123", ThreadID: "456"})
	if e.Display != "My Group / Topic" || e.Meta["chat_type"] != "supergroup" {
		t.Errorf("latest sighting did not win: %+v", e)
	}
	if e, _ := d.Get(chat.ChannelKey{Platform: chat.Discord, ChatID: "987654321"}); e.Display != "CAR HQ / #general" || e.Meta["guild_id"] != "123456" {
		t.Errorf("discord entry %+v", e)
	}
	reopened, err := openDirectoryAt(t, path, DirectoryOptions{})
	if err != nil {
		t.Fatalf("rebuilt file does not open: %v", err)
	}
	if reopened.Len() != 4 {
		t.Errorf("rebuilt file holds %d entries", reopened.Len())
	}
	data, _ := os.ReadFile(inbound)
	if strings.Contains(string(data), "secret") {
		t.Error("an interaction token reached the mirror")
	}

	// Merging the mirrors into a directory in use keeps each sighting's
	// recorded time, and a newer sighting already known wins.
	live, _ := openDir(t, filepath.Join(root, "live.json"), DirectoryOptions{Clock: fake})
	fake.Advance(24 * time.Hour)
	newer := fake.Now()
	live.Upsert(DirectoryEntry{Platform: chat.Telegram, ChatID: "42", Display: "Alice (renamed)", SeenAt: newer})
	if n, err := live.MergeMirrors(openRoot(t, flows)); err != nil || n != 5 {
		t.Fatalf("merge: %d sightings, %v; want 5", n, err)
	}
	if e, _ := live.Get(chat.ChannelKey{Platform: chat.Discord, ChatID: "987654321"}); !e.SeenAt.Before(newer) || e.SeenAt.IsZero() {
		t.Errorf("merged entry seen at %v: want its mirror record's time, not now (%v)", e.SeenAt, newer)
	}
	if e, _ := live.Get(chat.ChannelKey{Platform: chat.Telegram, ChatID: "42"}); e.Display != "Alice (renamed)" || !e.SeenAt.Equal(newer) {
		t.Errorf("the newer live sighting lost to the mirrors: %+v", e)
	}
	if reread, err := openDirectoryAt(t, filepath.Join(root, "live.json"), DirectoryOptions{}); err != nil || reread.Len() != 4 {
		t.Errorf("merged directory not written: %v", err)
	}

	// No mirrors at all: an empty directory.
	if d, n, err := RebuildDirectory(openRoot(t, root), "empty.json", openRoot(t, filepath.Join(root, "none")), DirectoryOptions{}); err != nil || n != 0 {
		t.Errorf("rebuild from nothing: %d, %v", n, err)
	} else {
		d.Close()
	}
}

// openDirectoryAt is OpenDirectory of the file at path.
func openDirectoryAt(t testing.TB, path string, opts DirectoryOptions) (*Directory, error) {
	t.Helper()
	root, name := rootFile(t, path)
	return OpenDirectory(root, name, opts)
}
