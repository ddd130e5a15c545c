package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/clock"
)

var seedTargets = []chat.Key{
	chat.WebKey,
	chat.LocalKey(".codex-autorunner/pma/deliveries.jsonl"),
	chat.ChatKey(chat.Telegram, "123", "456"),
	chat.ChatKey(chat.Discord, "987654321", ""),
}

var seedUpdatedAt = time.Date(2026, 2, 26, 10, 0, 0, 0, time.UTC)

func openTargetsAt(t *testing.T, path string, now time.Time) (*Targets, *clock.Fake) {
	t.Helper()
	tg, err := OpenTargets(rootFile(t, path))
	if err != nil {
		t.Fatal(err)
	}
	fake := clock.NewFake(now)
	tg.clock = fake
	return tg, fake
}

func TestTargetsSeedRoundTrip(t *testing.T) {
	seed, err := os.ReadFile("testdata/seed_delivery_targets.json")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "pma", "delivery_targets.json")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	tg, _ := openTargetsAt(t, path, seedUpdatedAt)
	if got := tg.List(); !slices.Equal(got, seedTargets) {
		t.Fatalf("List = %v, want %v", got, seedTargets)
	}
	for _, k := range seedTargets[1:] {
		if got := tg.LastDelivery(k); got != "turn_abc" {
			t.Errorf("LastDelivery(%s) = %q, want turn_abc", k, got)
		}
	}
	if got := tg.LastDelivery(chat.WebKey); got != "" {
		t.Errorf("LastDelivery(web) = %q, want none", got)
	}
	if tg.UpdatedAt() != "2026-02-26T10:00:00Z" {
		t.Errorf("UpdatedAt = %q", tg.UpdatedAt())
	}

	// Re-save through a mutation that changes nothing in the end.
	k := chat.ChatKey(chat.Telegram, "-100200", "")
	if added, err := tg.Add(k); err != nil || !added {
		t.Fatalf("Add: %v %v", added, err)
	}
	if removed, err := tg.Remove(k); err != nil || !removed {
		t.Fatalf("Remove: %v %v", removed, err)
	}
	saved, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !sameJSON(t, saved, seed) {
		t.Errorf("re-saved file differs from the seed:\n%s", saved)
	}
	golden(t, "delivery_targets.golden.json", saved)

	// The canonical form loads and re-saves byte for byte.
	again, _ := openTargetsAt(t, path, seedUpdatedAt)
	if _, err := again.Add(k); err != nil {
		t.Fatal(err)
	}
	if _, err := again.Remove(k); err != nil {
		t.Fatal(err)
	}
	resaved, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(resaved) != string(saved) {
		t.Errorf("canonical file changed on re-save:\n%s", resaved)
	}
}

func TestTargetsAddRemoveClear(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pma", "delivery_targets.json")
	tg, fake := openTargetsAt(t, path, seedUpdatedAt)
	if len(tg.List()) != 0 {
		t.Fatal("a missing file is not an empty set")
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatal("opening created the file")
	}
	tgK := chat.ChatKey(chat.Telegram, "123", "456")
	dcK := chat.ChatKey(chat.Discord, "987654321", "")
	steps := []struct {
		op   string
		key  chat.Key
		want bool // added / removed
		list []chat.Key
	}{
		{"add", chat.WebKey, true, []chat.Key{chat.WebKey}},
		{"add", tgK, true, []chat.Key{chat.WebKey, tgK}},
		{"add", tgK, false, []chat.Key{chat.WebKey, tgK}},
		{"add", dcK, true, []chat.Key{chat.WebKey, tgK, dcK}},
		{"remove", chat.WebKey, true, []chat.Key{tgK, dcK}},
		{"remove", chat.WebKey, false, []chat.Key{tgK, dcK}},
		{"add", chat.WebKey, true, []chat.Key{tgK, dcK, chat.WebKey}},
	}
	for i, st := range steps {
		fake.Advance(time.Minute)
		var got bool
		var err error
		if st.op == "add" {
			got, err = tg.Add(st.key)
		} else {
			got, err = tg.Remove(st.key)
		}
		if err != nil || got != st.want {
			t.Fatalf("step %d %s %s: %v, %v; want %v", i, st.op, st.key, got, err, st.want)
		}
		if !slices.Equal(tg.List(), st.list) {
			t.Fatalf("step %d: List %v, want %v", i, tg.List(), st.list)
		}
		reloaded, err := OpenTargets(rootFile(t, path))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(reloaded.List(), st.list) {
			t.Fatalf("step %d: file holds %v, want %v", i, reloaded.List(), st.list)
		}
	}
	// Step 5 removed nothing and wrote nothing; step 6 was the last write.
	data, _ := os.ReadFile(path)
	if !strings.Contains(string(data), `"updated_at": "2026-02-26T10:07:00Z"`) {
		t.Errorf("updated_at is not the time of the last write in RFC 3339 UTC seconds:\n%s", data)
	}
	if strings.Contains(string(data), `"thread_id": ""`) {
		t.Errorf("empty thread_id written:\n%s", data)
	}

	if err := tg.RecordDelivery("turn_1", []chat.Key{tgK}); err != nil {
		t.Fatal(err)
	}
	n, err := tg.Clear()
	if err != nil || n != 3 {
		t.Fatalf("Clear: %d, %v; want 3", n, err)
	}
	if tg.LastDelivery(tgK) != "" {
		t.Error("Clear kept delivery bookkeeping")
	}
	data, _ = os.ReadFile(path)
	if !strings.Contains(string(data), `"targets": []`) || !strings.Contains(string(data), `"last_delivery_by_target": {}`) {
		t.Errorf("cleared file:\n%s", data)
	}
	if n, err := tg.Clear(); err != nil || n != 0 {
		t.Errorf("second Clear: %d, %v", n, err)
	}
}

func TestTargetsDeliveryBookkeeping(t *testing.T) {
	path := filepath.Join(t.TempDir(), "delivery_targets.json")
	tg, _ := openTargetsAt(t, path, seedUpdatedAt)
	for _, k := range seedTargets {
		if _, err := tg.Add(k); err != nil {
			t.Fatal(err)
		}
	}
	if got := tg.PendingFor("turn_1"); !slices.Equal(got, seedTargets) {
		t.Fatalf("PendingFor before any delivery = %v", got)
	}
	delivered := []chat.Key{seedTargets[0], seedTargets[2]}
	if err := tg.RecordDelivery("turn_1", delivered); err != nil {
		t.Fatal(err)
	}
	if got, want := tg.PendingFor("turn_1"), []chat.Key{seedTargets[1], seedTargets[3]}; !slices.Equal(got, want) {
		t.Errorf("PendingFor(turn_1) = %v, want %v", got, want)
	}
	if got := tg.PendingFor("turn_2"); !slices.Equal(got, seedTargets) {
		t.Errorf("PendingFor(turn_2) = %v, want all", got)
	}
	reloaded, err := OpenTargets(rootFile(t, path))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range delivered {
		if reloaded.LastDelivery(k) != "turn_1" {
			t.Errorf("after reload LastDelivery(%s) = %q", k, reloaded.LastDelivery(k))
		}
	}
	if _, err := tg.Remove(seedTargets[2]); err != nil {
		t.Fatal(err)
	}
	if tg.LastDelivery(seedTargets[2]) != "" {
		t.Error("Remove kept the removed target's last delivery")
	}
	data, _ := os.ReadFile(path)
	if strings.Contains(string(data), seedTargets[2].String()) {
		t.Errorf("file still mentions the removed target:\n%s", data)
	}

	for _, bad := range []struct {
		turn string
		keys []chat.Key
	}{
		{"", []chat.Key{chat.WebKey}},
		{"turn\n1", []chat.Key{chat.WebKey}},
		{"turn_3", []chat.Key{{Kind: chat.KindChat, Platform: "irc", ChatID: "1"}}},
	} {
		if err := tg.RecordDelivery(bad.turn, bad.keys); err == nil {
			t.Errorf("RecordDelivery(%q, %v) accepted", bad.turn, bad.keys)
		}
	}
}

func TestTargetsRefuseInvalidKeys(t *testing.T) {
	tg, _ := openTargetsAt(t, filepath.Join(t.TempDir(), "t.json"), seedUpdatedAt)
	bad := []chat.Key{
		{},
		{Kind: chat.KindWeb, Path: "x"},
		{Kind: chat.KindLocal},
		{Kind: chat.KindLocal, Path: "a\nb"},
		{Kind: chat.KindChat, Platform: chat.Telegram, ChatID: "abc"},
		{Kind: chat.KindChat, Platform: chat.Telegram, ChatID: "1:2"},
		{Kind: chat.KindChat, Platform: chat.Telegram, ChatID: "1", ThreadID: "0"},
		{Kind: chat.KindChat, Platform: chat.Discord, ChatID: "1", ThreadID: "2"},
		{Kind: chat.KindChat, Platform: "slack", ChatID: "1"},
		{Kind: "email", Path: "a@b"},
	}
	for _, k := range bad {
		added, err := tg.Add(k)
		if err == nil || added {
			t.Errorf("Add(%#v) = %v, %v; want an error", k, added, err)
			continue
		}
		if !strings.Contains(err.Error(), "accepted") {
			t.Errorf("Add(%#v): %q does not show the accepted forms", k, err)
		}
	}
	if len(tg.List()) != 0 {
		t.Errorf("invalid keys were added: %v", tg.List())
	}
}

func TestTargetsInvalidEntryInFile(t *testing.T) {
	tests := []struct {
		name  string
		entry string
		msg   string
	}{
		{"unknown kind", `{"kind": "email", "path": "x"}`, `unknown kind "email"`},
		{"missing kind", `{"path": "x"}`, `missing "kind"`},
		{"web with path", `{"kind": "web", "path": "x"}`, "takes no other fields"},
		{"local without path", `{"kind": "local"}`, `needs a "path"`},
		{"chat without id", `{"kind": "chat", "platform": "telegram"}`, `needs "platform" and "chat_id"`},
		{"telegram bad id", `{"kind": "chat", "platform": "telegram", "chat_id": "abc"}`, "not an integer"},
		{"discord thread", `{"kind": "chat", "platform": "discord", "chat_id": "1", "thread_id": "2"}`, "no thread part"},
		{"colon in id", `{"kind": "chat", "platform": "telegram", "chat_id": "1:2"}`, "not canonical"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "delivery_targets.json")
			content := "{\n  \"version\": 1,\n  \"targets\": [\n    {\"kind\": \"web\"},\n    " + tt.entry + "\n  ]\n}\n"
			unchanged := frozenFile(t, path, content)
			_, err := OpenTargets(rootFile(t, path))
			var ce *CorruptFileError
			if !errors.As(err, &ce) {
				t.Fatalf("got %v, want *CorruptFileError", err)
			}
			msg := err.Error()
			for _, want := range []string{path + ":5:5", "targets[1]", tt.msg} {
				if !strings.Contains(msg, want) {
					t.Errorf("message %q lacks %q", msg, want)
				}
			}
			unchanged()
		})
	}
}

func TestTargetsCorruptFileUntouched(t *testing.T) {
	for _, tt := range corruptContents {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "pma", "delivery_targets.json")
			unchanged := frozenFile(t, path, tt.content)
			_, err := OpenTargets(rootFile(t, path))
			var ce *CorruptFileError
			if !errors.As(err, &ce) {
				t.Fatalf("got %v, want *CorruptFileError", err)
			}
			if want := fmt.Sprintf("%s:%d:%d", path, tt.tLine, tt.tCol); !strings.HasPrefix(err.Error(), want) {
				t.Errorf("message %q does not start with %s", err, want)
			}
			unchanged()
		})
	}
}

func TestTargetsCorruptedAfterOpenIsNotOverwritten(t *testing.T) {
	path := filepath.Join(t.TempDir(), "delivery_targets.json")
	tg, _ := openTargetsAt(t, path, seedUpdatedAt)
	if _, err := tg.Add(chat.WebKey); err != nil {
		t.Fatal(err)
	}
	unchanged := frozenFile(t, path, `{"version": 1, "targets": [`)
	k := chat.ChatKey(chat.Discord, "1", "")
	mutations := map[string]func() error{
		"add":    func() error { _, err := tg.Add(k); return err },
		"remove": func() error { _, err := tg.Remove(chat.WebKey); return err },
		"clear":  func() error { _, err := tg.Clear(); return err },
		"record": func() error { return tg.RecordDelivery("turn_1", []chat.Key{chat.WebKey}) },
	}
	for name, m := range mutations {
		if err := m(); !errors.Is(err, ErrCorruptFile) {
			t.Errorf("%s on a corrupted file: %v, want ErrCorruptFile", name, err)
		}
	}
	unchanged()
	if !slices.Equal(tg.List(), []chat.Key{chat.WebKey}) {
		t.Errorf("failed mutations changed memory: %v", tg.List())
	}
}

func TestTargetsHandEditIsKept(t *testing.T) {
	path := filepath.Join(t.TempDir(), "delivery_targets.json")
	tg, _ := openTargetsAt(t, path, seedUpdatedAt)
	if _, err := tg.Add(chat.WebKey); err != nil {
		t.Fatal(err)
	}
	edited := `{"version": 1, "targets": [{"kind": "web"}, {"kind": "local", "path": "by-hand.jsonl"}], "future_field": true}`
	if err := os.WriteFile(path, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := tg.Add(chat.ChatKey(chat.Discord, "1", "")); err != nil {
		t.Fatal(err)
	}
	want := []chat.Key{chat.WebKey, chat.LocalKey("by-hand.jsonl"), chat.ChatKey(chat.Discord, "1", "")}
	if !slices.Equal(tg.List(), want) {
		t.Errorf("List %v, want %v (the hand edit was lost)", tg.List(), want)
	}
}

func TestTargetsVersionTooNew(t *testing.T) {
	path := filepath.Join(t.TempDir(), "delivery_targets.json")
	unchanged := frozenFile(t, path, `{"version": 2, "targets": [{"kind": "pigeon"}]}`)
	_, err := OpenTargets(rootFile(t, path))
	if !errors.Is(err, ErrFileTooNew) || !strings.Contains(err.Error(), path) {
		t.Fatalf("got %v, want ErrFileTooNew naming the file", err)
	}
	unchanged()
}

func TestTargetsDuplicateEntriesCollapse(t *testing.T) {
	path := filepath.Join(t.TempDir(), "delivery_targets.json")
	frozenFile(t, path, `{"version": 1, "targets": [{"kind": "web"}, {"kind": "web"}]}`)
	tg, err := OpenTargets(rootFile(t, path))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(tg.List(), []chat.Key{chat.WebKey}) {
		t.Errorf("List %v", tg.List())
	}
}

func TestTargetsConcurrentMutations(t *testing.T) {
	path := filepath.Join(t.TempDir(), "delivery_targets.json")
	tg, err := OpenTargets(rootFile(t, path))
	if err != nil {
		t.Fatal(err)
	}
	const n = 20
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k := chat.ChatKey(chat.Discord, fmt.Sprint(1000+i), "")
			if _, err := tg.Add(k); err != nil {
				t.Error(err)
			}
			if err := tg.RecordDelivery("turn_x", []chat.Key{k}); err != nil {
				t.Error(err)
			}
			_ = tg.PendingFor("turn_x")
		}()
	}
	wg.Wait()
	reloaded, err := OpenTargets(rootFile(t, path))
	if err != nil {
		t.Fatal(err)
	}
	if got := len(reloaded.List()); got != n {
		t.Errorf("file holds %d targets, want %d", got, n)
	}
	if got := reloaded.PendingFor("turn_x"); len(got) != 0 {
		t.Errorf("pending after recording every delivery: %v", got)
	}
}
