package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/clock"
)

const (
	run1 = "20260226T090000Z-aaaa"
	run2 = "20260226T100000Z-bbbb"
	run3 = "20260226T110000Z-cccc"
)

// keepAll opens a mirror with the default options: opening never prunes.
var keepAll = MirrorOptions{}

func openMirror(t testing.TB, flows, runID string, opts MirrorOptions) *Mirror {
	t.Helper()
	m, err := OpenMirror(openRoot(t, flows), runID, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func in(text string) MirrorRecord {
	return MirrorRecord{Direction: DirectionInbound, Platform: "telegram", ChatID: "-100123", ThreadID: "456", MessageID: "7", Actor: "telegram:1", Kind: KindMessage, Text: text}
}

func out(text string) MirrorRecord {
	return MirrorRecord{Direction: DirectionOutbound, Platform: "telegram", ChatID: "-100123", Kind: KindDelivered, Text: text,
		Meta: map[string]string{MetaOutboxID: "reply:telegram.-100123.7:chat:telegram:-100123:0", MetaPlatformMessageID: "99"}}
}

func readAll(t *testing.T, flows string, f MirrorFilter) []MirrorRecord {
	t.Helper()
	var recs []MirrorRecord
	if err := ReadMirror(openRoot(t, flows), f, func(r MirrorRecord) error { recs = append(recs, r); return nil }); err != nil {
		t.Fatal(err)
	}
	return recs
}

func texts(recs []MirrorRecord) []string {
	var out []string
	for _, r := range recs {
		out = append(out, r.Text)
	}
	return out
}

func TestRunID(t *testing.T) {
	now := time.Date(2026, 11, 21, 23, 46, 40, 123, time.FixedZone("X", 3600))
	id := NewRunID(now)
	if !strings.HasPrefix(id, "20261121T224640Z-") || len(id) != 21 {
		t.Errorf("NewRunID = %q", id)
	}
	if got, err := ParseRunID(id); err != nil || !got.Equal(now.Truncate(time.Second)) {
		t.Errorf("ParseRunID(%q) = %v, %v", id, got, err)
	}
	if again, more := NewRunID(now), NewRunID(now); again == id && more == id {
		t.Error("run ids of the same second do not differ")
	}
	for _, bad := range []string{"", "20261121T224640Z", "20261121T224640Z-3F9A", "20261121T224640Z-3f9", "20261321T224640Z-3f9a", "../../etc-3f9a", "20261121T224640Z_3f9a", "20261121T224640Z-3f9a/"} {
		if _, err := ParseRunID(bad); err == nil {
			t.Errorf("ParseRunID(%q) accepted", bad)
		}
	}
	if _, err := OpenMirror(openRoot(t, t.TempDir()), "../escape", MirrorOptions{}); err == nil {
		t.Error("OpenMirror accepted a bad run id")
	}
}

func TestTextPreview(t *testing.T) {
	long := strings.Repeat("é", 250)
	tests := []struct{ in, want string }{
		{"", ""},
		{"one line", "one line"},
		{"a\nb\r\nc\rd", "a b c d"},
		{long, strings.Repeat("é", 200) + "…"},
		{strings.Repeat("x", 200), strings.Repeat("x", 200)},
		{strings.Repeat("\n", 201), strings.Repeat(" ", 200) + "…"},
		{strings.Repeat("x", 199) + "éy", strings.Repeat("x", 199) + "é…"},
		{"bad \xff\xe2\x82 end", "bad \ufffd\ufffd\ufffd end"},
		{"\x00\x7f tab\t", "\x00\x7f tab\t"},
	}
	for _, tt := range tests {
		if got := TextPreview(tt.in); got != tt.want {
			t.Errorf("TextPreview(%.20q) = %.30q, want %.30q", tt.in, got, tt.want)
		}
	}
}

func TestMirrorRecordHasEveryField(t *testing.T) {
	flows := t.TempDir()
	fake := clock.NewFake(time.Date(2026, 2, 26, 9, 0, 0, 5e6, time.UTC))
	m := openMirror(t, flows, run1, MirrorOptions{Clock: fake})
	ctx := context.Background()
	if err := m.Append(ctx, MirrorRecord{Direction: DirectionInbound, Text: "héllo\nworld <b>&"}, true); err != nil {
		t.Fatal(err)
	}
	if err := m.Append(ctx, out("sent"), false); err != nil {
		t.Fatal(err)
	}
	if err := m.Append(ctx, MirrorRecord{Direction: "sideways"}, false); err == nil {
		t.Error("a bad direction was accepted")
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.Append(ctx, in("late"), false); !errors.Is(err, ErrMirrorClosed) {
		t.Errorf("append after Close: %v", err)
	}

	data, err := os.ReadFile(filepath.Join(flows, run1, "chat", "inbound.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Count(data, []byte{'\n'}) != 1 || !bytes.HasSuffix(data, []byte{'\n'}) {
		t.Fatalf("inbound.jsonl is not one line: %q", data)
	}
	var raw map[string]any
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"ts": "2026-02-26T09:00:00.005Z", "direction": "inbound", "platform": "", "chat_id": "", "thread_id": "",
		"message_id": "", "actor": "", "kind": "", "text": "héllo\nworld <b>&", "meta": map[string]any{},
		"run_id": run1, "event_type": "chat.inbound", "text_preview": "héllo world <b>&", "text_bytes": float64(len("héllo\nworld <b>&")),
	}
	for k, v := range want {
		got, ok := raw[k]
		if !ok {
			t.Errorf("field %q missing", k)
			continue
		}
		if fmt.Sprint(got) != fmt.Sprint(v) {
			t.Errorf("%s = %v, want %v", k, got, v)
		}
	}
	if len(raw) != len(want) {
		t.Errorf("record has %d fields, want %d: %s", len(raw), len(want), data)
	}
	if bytes.Contains(data, []byte(`\u003c`)) {
		t.Errorf("HTML escaping in the mirror: %s", data)
	}

	recs := readAll(t, flows, MirrorFilter{Direction: DirectionOutbound})
	if len(recs) != 1 || recs[0].EventType != EventOutbound || recs[0].Meta[MetaOutboxID] == "" || recs[0].Meta[MetaPlatformMessageID] != "99" || recs[0].RunID != run1 {
		t.Errorf("outbound record %+v", recs)
	}
}

func TestInboundRecord(t *testing.T) {
	msg := &chat.Inbound{TurnID: "telegram.-100123.7", Platform: chat.Telegram, ChatID: "-100123", ThreadID: "456", MessageID: "7",
		UserID: "1", UserName: "alice", ChatType: "supergroup", ChatTitle: "My Group", TopicTitle: "Topic", Text: "/verbs", Edited: true,
		Meta: map[string]string{"reply_to": "6", "interaction_token": "secret", "Token": "x"}}
	rec := InboundRecord(msg, "")
	if rec.Kind != KindEdited || rec.Actor != "telegram:1" || rec.Direction != DirectionInbound || rec.MessageID != "7" {
		t.Errorf("record %+v", rec)
	}
	for k, v := range map[string]string{"chat_title": "My Group", "topic_title": "Topic", "chat_type": "supergroup", "user_name": "alice", "turn_id": "telegram.-100123.7", "reply_to": "6"} {
		if rec.Meta[k] != v {
			t.Errorf("meta %s = %q, want %q", k, rec.Meta[k], v)
		}
	}
	if _, ok := rec.Meta["interaction_token"]; ok || rec.Meta["Token"] != "" {
		t.Errorf("token meta reached the record: %v", rec.Meta)
	}
	if InboundRecord(msg, KindDenied).Kind != KindDenied {
		t.Error("explicit kind ignored")
	}
}

// gatedFile holds the first fsync until gate is closed.
type gatedFile struct {
	*os.File
	gate, entered chan struct{}
	syncs         atomic.Int64
}

func (g *gatedFile) Sync() error {
	if g.syncs.Add(1) == 1 {
		close(g.entered)
		<-g.gate
	}
	return g.File.Sync()
}

func TestMirrorGroupCommit(t *testing.T) {
	flows := t.TempDir()
	gated := &gatedFile{gate: make(chan struct{}), entered: make(chan struct{})}
	opts := keepAll
	opts.OpenFile = func(root *os.Root, name string, flag int, perm os.FileMode) (MirrorFile, error) {
		f, err := root.OpenFile(name, flag, perm)
		if err != nil || filepath.Base(name) != "inbound.jsonl" {
			return f, err
		}
		gated.File = f
		return gated, nil
	}
	m := openMirror(t, flows, run1, opts)
	ctx := context.Background()
	var release sync.Once
	open := func() { release.Do(func() { close(gated.gate) }) }
	defer open() // a failing test must not leave the leader stuck

	var returned atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	appendDurable := func(text string) {
		defer wg.Done()
		err := m.Append(ctx, in(text), true)
		if err == nil && gated.syncs.Load() < 1 {
			err = fmt.Errorf("%s returned before any fsync", text)
		}
		returned.Add(1)
		errs <- err
	}
	wg.Add(1)
	go appendDurable("leader")
	<-gated.entered // the leader is inside its fsync

	const followers = 10
	for i := range followers {
		wg.Add(1)
		go appendDurable(fmt.Sprint("follower ", i))
	}
	deadline := time.Now().Add(10 * time.Second)
	for m.in.written.Load() < 1+followers {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d writes happened", m.in.written.Load(), 1+followers)
		}
		time.Sleep(time.Millisecond)
	}
	if n := returned.Load(); n != 0 {
		t.Fatalf("%d durable appends returned while the fsync was held", n)
	}
	open()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	// One fsync for the leader, one shared by every follower.
	if n := gated.syncs.Load(); n != 2 {
		t.Errorf("%d fsyncs for %d durable appends, want 2", n, 1+followers)
	}
	if got := len(readAll(t, flows, MirrorFilter{})); got != 1+followers {
		t.Errorf("read %d records, want %d", got, 1+followers)
	}
}

func TestMirrorConcurrentAppends(t *testing.T) {
	flows := t.TempDir()
	m := openMirror(t, flows, run1, MirrorOptions{RotateBytes: 64 << 10})
	const goroutines, each = 16, 40
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				rec := in(fmt.Sprintf("%02d:%03d %s", g, i, strings.Repeat("x", g*7)))
				if g%2 == 1 {
					rec = out(rec.Text)
				}
				if err := m.Append(context.Background(), rec, i%3 != 0); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	var bad []string
	recs := readAll(t, flows, MirrorFilter{OnBadLine: func(p string, l int, err error) { bad = append(bad, fmt.Sprint(p, l, err)) }})
	if len(bad) > 0 || len(recs) != goroutines*each {
		t.Fatalf("%d records, bad lines %v", len(recs), bad)
	}
	// Each goroutine's records appear in its own order.
	next := map[string]int{}
	for _, r := range recs {
		g, i := r.Text[:2], 0
		fmt.Sscanf(r.Text[3:6], "%d", &i)
		if i != next[g] {
			t.Fatalf("goroutine %s: record %d after %d", g, i, next[g]-1)
		}
		next[g]++
	}
}

func TestMirrorRotation(t *testing.T) {
	flows := t.TempDir()
	opts := keepAll
	opts.RotateBytes = 2000
	m := openMirror(t, flows, run1, opts)
	ctx := context.Background()
	for i := range 40 {
		if err := m.Append(ctx, in(fmt.Sprintf("%03d %s", i, strings.Repeat("r", 60))), false); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(run1, "chat")
	rot := rotatedFiles(openRoot(t, flows), dir, DirectionInbound)
	if len(rot) < 3 {
		t.Fatalf("%d rotated files, want several", len(rot))
	}
	for i, r := range rot {
		if r.n != i+1 {
			t.Errorf("rotated files numbered %v", rot)
		}
		if fi, _ := os.Stat(filepath.Join(flows, r.path)); fi.Size() > opts.RotateBytes {
			t.Errorf("%s has %d bytes, over %d", r.path, fi.Size(), opts.RotateBytes)
		}
	}
	want := make([]string, 40)
	for i := range want {
		want[i] = fmt.Sprintf("%03d %s", i, strings.Repeat("r", 60))
	}
	if got := texts(readAll(t, flows, MirrorFilter{})); !slices.Equal(got, want) {
		t.Fatalf("read back %d records out of order or incomplete", len(got))
	}

	// Reopening the run continues the numbering and never overwrites.
	m2 := openMirror(t, flows, run1, opts)
	for i := 40; i < 60; i++ {
		if err := m2.Append(ctx, in(fmt.Sprintf("%03d %s", i, strings.Repeat("r", 60))), false); err != nil {
			t.Fatal(err)
		}
	}
	m2.Close()
	got := texts(readAll(t, flows, MirrorFilter{}))
	if len(got) != 60 || got[59][:3] != "059" {
		t.Errorf("after reopening: %d records", len(got))
	}
	if rot2 := rotatedFiles(openRoot(t, flows), dir, DirectionInbound); len(rot2) <= len(rot) || rot2[len(rot)].n != len(rot)+1 {
		t.Errorf("rotation after reopening: %v", rot2)
	}
}

func TestReadMirrorSkipsTornLastLine(t *testing.T) {
	flows := t.TempDir()
	m := openMirror(t, flows, run1, keepAll)
	ctx := context.Background()
	for _, s := range []string{"a", "b"} {
		if err := m.Append(ctx, in(s), false); err != nil {
			t.Fatal(err)
		}
	}
	m.Close()
	path := filepath.Join(flows, run1, "chat", "inbound.jsonl")
	appendRaw := func(s string) {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(s)
		f.Close()
	}
	type bad struct {
		path string
		line int
	}
	read := func() ([]string, []bad) {
		var bads []bad
		recs := readAll(t, flows, MirrorFilter{OnBadLine: func(p string, l int, err error) { bads = append(bads, bad{p, l}) }})
		return texts(recs), bads
	}

	appendRaw("\n   \n") // blank lines
	appendRaw(`{"ts":"2026-02-26T09:00:00Z","direction":"inbo`)
	if got, bads := read(); !slices.Equal(got, []string{"a", "b"}) || len(bads) != 0 {
		t.Errorf("torn last line: %v, bad lines %v", got, bads)
	}
	appendRaw("\n\n") // still the last line that holds anything
	if got, bads := read(); !slices.Equal(got, []string{"a", "b"}) || len(bads) != 0 {
		t.Errorf("torn line followed by blank lines: %v, bad lines %v", got, bads)
	}
	m2 := openMirror(t, flows, run1, keepAll)
	if err := m2.Append(ctx, in("c"), false); err != nil {
		t.Fatal(err)
	}
	m2.Close()
	appendRaw("null\n5\n")
	got, bads := read()
	if !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("records %v", got)
	}
	shown := filepath.Join(FlowsDir, run1, "chat", "inbound.jsonl") // as the state directory names it
	if want := []bad{{shown, 5}, {shown, 8}}; !slices.Equal(bads, want) {
		t.Errorf("bad lines %v, want %v (the torn line and \"null\"; \"5\" is last)", bads, want)
	}
}

// flakyFile fails writes and fsyncs on demand, like a full disk.
type flakyFile struct {
	*os.File
	mu        sync.Mutex
	failAfter int // a write puts this many bytes, then fails with ENOSPC; -1 off
	failSync  error
}

func (f *flakyFile) Write(p []byte) (int, error) {
	f.mu.Lock()
	n := f.failAfter
	f.failAfter = -1
	f.mu.Unlock()
	if n < 0 {
		return f.File.Write(p)
	}
	k, _ := f.File.Write(p[:min(n, len(p))])
	return k, &os.PathError{Op: "write", Path: f.Name(), Err: syscall.ENOSPC}
}

func (f *flakyFile) Sync() error {
	f.mu.Lock()
	err := f.failSync
	f.failSync = nil
	f.mu.Unlock()
	if err != nil {
		return err
	}
	return f.File.Sync()
}

func TestMirrorWriteErrorRecovers(t *testing.T) {
	flows := t.TempDir()
	flaky := &flakyFile{failAfter: -1}
	opts := keepAll
	opts.OpenFile = func(root *os.Root, name string, flag int, perm os.FileMode) (MirrorFile, error) {
		f, err := root.OpenFile(name, flag, perm)
		if err != nil || filepath.Base(name) != "inbound.jsonl" {
			return f, err
		}
		flaky.File = f
		return flaky, nil
	}
	m := openMirror(t, flows, run1, opts)
	ctx := context.Background()
	steps := []struct {
		text      string
		failAfter int
		failSync  error
		durable   bool
		wantErr   error
	}{
		{"r1", -1, nil, false, nil},
		{"r2", 10, nil, false, syscall.ENOSPC}, // torn: 10 bytes written
		{"r3", -1, nil, false, nil},            // starts on a fresh line
		{"r4", 0, nil, false, syscall.ENOSPC},  // nothing written
		{"r5", -1, nil, true, nil},
		{"r6", -1, syscall.EIO, true, syscall.EIO}, // written, fsync failed
		{"r7", -1, nil, true, nil},
		{"r8", 25, nil, false, syscall.ENOSPC}, // torn at the end of the file
	}
	for _, st := range steps {
		flaky.mu.Lock()
		flaky.failAfter, flaky.failSync = st.failAfter, st.failSync
		flaky.mu.Unlock()
		err := m.Append(ctx, in(st.text), st.durable)
		if !errors.Is(err, st.wantErr) || (err == nil) != (st.wantErr == nil) {
			t.Fatalf("%s: %v, want %v", st.text, err, st.wantErr)
		}
		// Errors reach API callers: they name the file relative to the
		// state directory, never by its host path.
		if shown := filepath.Join(FlowsDir, run1, "chat", "inbound.jsonl"); err != nil && (!strings.Contains(err.Error(), shown) || strings.Contains(err.Error(), flows)) {
			t.Errorf("%s: error %q does not name the file as %s, or names its host path", st.text, err, shown)
		}
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	var bads []int
	recs := readAll(t, flows, MirrorFilter{OnBadLine: func(_ string, l int, _ error) { bads = append(bads, l) }})
	if got, want := texts(recs), []string{"r1", "r3", "r5", "r6", "r7"}; !slices.Equal(got, want) {
		t.Errorf("records %v, want %v", got, want)
	}
	if !slices.Equal(bads, []int{2}) {
		t.Errorf("bad lines %v, want only line 2 (r2's torn part)", bads)
	}
}

func writeRuns(t *testing.T, flows string) {
	t.Helper()
	ctx := context.Background()
	base := time.Date(2026, 2, 26, 9, 0, 0, 0, time.UTC)
	for ri, run := range []string{run1, run2, run3} {
		m := openMirror(t, flows, run, keepAll)
		for i := range 7 {
			var rec MirrorRecord
			if i%2 == 0 {
				rec = in(fmt.Sprintf("%d-%d", ri, i))
			} else {
				rec = out(fmt.Sprintf("%d-%d", ri, i))
			}
			rec.TS = base.Add(time.Duration(ri*10+i) * time.Minute)
			// Write outbound first so that only the merge puts them in order.
			if rec.Direction == DirectionOutbound {
				rec.TS = rec.TS.Add(-time.Second)
			}
			if err := m.Append(ctx, rec, false); err != nil {
				t.Fatal(err)
			}
		}
		m.Close()
	}
}

func TestReadAndTailMirror(t *testing.T) {
	flows := t.TempDir()
	writeRuns(t, flows)
	all := texts(readAll(t, flows, MirrorFilter{}))
	var want []string
	for ri := range 3 {
		for i := range 7 {
			want = append(want, fmt.Sprintf("%d-%d", ri, i))
		}
	}
	if !slices.Equal(all, want) {
		t.Fatalf("ReadMirror = %v, want %v", all, want)
	}
	if got := ListRuns(openRoot(t, flows)); !slices.Equal(got, []string{run1, run2, run3}) {
		t.Errorf("ListRuns = %v", got)
	}
	empty := openRoot(t, filepath.Join(flows, run1, "chat"))
	if ListRuns(empty) != nil {
		t.Error("ListRuns of a directory without runs")
	}

	tests := []struct {
		name string
		f    MirrorFilter
		n    int
		want []string
	}{
		{"last run only", MirrorFilter{}, 5, []string{"2-2", "2-3", "2-4", "2-5", "2-6"}},
		{"across runs", MirrorFilter{}, 9, []string{"1-5", "1-6", "2-0", "2-1", "2-2", "2-3", "2-4", "2-5", "2-6"}},
		{"more than there is", MirrorFilter{}, 100, want},
		{"outbound", MirrorFilter{Direction: DirectionOutbound}, 4, []string{"1-5", "2-1", "2-3", "2-5"}},
		{"one run", MirrorFilter{RunID: run1, Direction: DirectionInbound}, 2, []string{"0-4", "0-6"}},
		{"zero", MirrorFilter{}, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			recs, err := TailMirror(openRoot(t, flows), tt.f, tt.n)
			if err != nil {
				t.Fatal(err)
			}
			if got := texts(recs); !slices.Equal(got, tt.want) {
				t.Errorf("TailMirror = %v, want %v", got, tt.want)
			}
		})
	}

	if _, err := TailMirror(openRoot(t, flows), MirrorFilter{RunID: "20990101T000000Z-ffff"}, 3); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("unknown run: %v", err)
	}
	if _, err := TailMirror(openRoot(t, flows), MirrorFilter{RunID: "../x"}, 3); err == nil {
		t.Error("bad run id accepted")
	}
	if err := ReadMirror(openRoot(t, flows), MirrorFilter{Direction: "both"}, func(MirrorRecord) error { return nil }); err == nil {
		t.Error("bad direction accepted")
	}
	stop := errors.New("stop")
	n := 0
	if err := ReadMirror(openRoot(t, flows), MirrorFilter{}, func(MirrorRecord) error { n++; return stop }); !errors.Is(err, stop) || n != 1 {
		t.Errorf("fn's error: %v after %d records", err, n)
	}
}

// waitArmed waits until the code under test has armed a timer on fake.
func waitArmed(t *testing.T, fake *clock.Fake) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for fake.Pending() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no timer armed")
		}
		time.Sleep(time.Millisecond)
	}
}

func receive(t *testing.T, ch <-chan MirrorRecord, n int) []string {
	t.Helper()
	var got []string
	timeout := time.After(10 * time.Second)
	for len(got) < n {
		select {
		case r := <-ch:
			got = append(got, r.Text)
		case <-timeout:
			t.Fatalf("received %v, want %d records", got, n)
		}
	}
	select {
	case r := <-ch:
		t.Fatalf("unexpected extra record %q", r.Text)
	default:
	}
	return got
}

func TestFollowMirror(t *testing.T) {
	flows := t.TempDir()
	opts := keepAll
	opts.RotateBytes = 1500
	m1 := openMirror(t, flows, run1, opts)
	ctx := context.Background()
	appendN := func(m *Mirror, prefix string, n int) []string {
		var want []string
		for i := range n {
			text := fmt.Sprintf("%s%02d %s", prefix, i, strings.Repeat("f", 40))
			rec := in(text)
			if i%3 == 2 {
				rec = out(text)
			}
			if err := m.Append(ctx, rec, false); err != nil {
				t.Fatal(err)
			}
			want = append(want, text)
		}
		return want
	}
	appendN(m1, "old", 3) // present before following: not delivered

	fake := clock.NewFake(t0)
	ch := make(chan MirrorRecord, 100)
	var bads atomic.Int64
	fctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- FollowMirror(fctx, openRoot(t, flows), MirrorFilter{Clock: fake, OnBadLine: func(string, int, error) { bads.Add(1) }},
			func(r MirrorRecord) error { ch <- r; return nil })
	}()
	poll := func() {
		waitArmed(t, fake)
		fake.Advance(FollowPollInterval)
	}

	waitArmed(t, fake)
	want := appendN(m1, "a", 3)
	poll()
	if got := receive(t, ch, 3); !slices.Equal(got, want) {
		t.Errorf("first poll %v, want %v", got, want)
	}

	// Several rotations between two polls.
	before := len(rotatedFiles(openRoot(t, flows), filepath.Join(run1, "chat"), DirectionInbound))
	want = appendN(m1, "b", 30)
	if after := len(rotatedFiles(openRoot(t, flows), filepath.Join(run1, "chat"), DirectionInbound)); after-before < 2 {
		t.Fatalf("only %d rotations; the test needs several", after-before)
	}
	poll()
	got := receive(t, ch, 30)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("across rotations got %v, want %v", got, want)
	}

	// A new run: the old one's last records, then the new one's.
	last := appendN(m1, "c", 1)
	m2 := openMirror(t, flows, run2, opts)
	want = append(last, appendN(m2, "d", 2)...)
	poll()
	if got := receive(t, ch, 3); !slices.Equal(got, want) {
		t.Errorf("run switch got %v, want %v", got, want)
	}
	want = appendN(m2, "e", 2)
	poll()
	if got := receive(t, ch, 2); !slices.Equal(got, want) {
		t.Errorf("new run got %v, want %v", got, want)
	}
	if bads.Load() != 0 {
		t.Errorf("%d bad lines reported", bads.Load())
	}

	cancel()
	if err := <-done; err != nil {
		t.Errorf("FollowMirror after cancel: %v", err)
	}
}

func TestFollowMirrorWaitsForFirstRun(t *testing.T) {
	flows := t.TempDir()
	fake := clock.NewFake(t0)
	ch := make(chan MirrorRecord, 10)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- FollowMirror(ctx, openRoot(t, flows), MirrorFilter{Clock: fake, Direction: DirectionOutbound}, func(r MirrorRecord) error { ch <- r; return nil })
	}()
	waitArmed(t, fake)
	m := openMirror(t, flows, run1, keepAll)
	m.Append(ctx, in("inbound is filtered out"), false)
	m.Append(ctx, out("first"), false)
	waitArmed(t, fake)
	fake.Advance(FollowPollInterval)
	if got := receive(t, ch, 1); got[0] != "first" {
		t.Errorf("got %v", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("FollowMirror: %v", err)
	}
}

func BenchmarkMirrorAppend(b *testing.B) {
	cases := []struct {
		name       string
		durable    bool
		goroutines int
	}{
		{"durable/goroutines=1", true, 1},
		{"durable/goroutines=16", true, 16},
		{"nondurable/goroutines=1", false, 1},
		{"nondurable/goroutines=16", false, 16},
	}
	for _, bc := range cases {
		b.Run(bc.name, func(b *testing.B) {
			var syncs atomic.Int64
			opts := keepAll
			opts.OpenFile = func(root *os.Root, name string, flag int, perm os.FileMode) (MirrorFile, error) {
				f, err := root.OpenFile(name, flag, perm)
				if err != nil {
					return nil, err
				}
				return countingFile{f, &syncs}, nil
			}
			m := openMirror(b, b.TempDir(), NewRunID(time.Now()), opts)
			rec := in(strings.Repeat("benchmark text ", 14))
			ctx := context.Background()
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			for range bc.goroutines {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for next.Add(1) <= int64(b.N) {
						if err := m.Append(ctx, rec, bc.durable); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
			if n := syncs.Load(); bc.durable && n > 0 {
				b.ReportMetric(float64(b.N)/float64(n), "records/fsync")
			}
		})
	}
}

type countingFile struct {
	*os.File
	syncs *atomic.Int64
}

func (c countingFile) Sync() error {
	c.syncs.Add(1)
	return c.File.Sync()
}
