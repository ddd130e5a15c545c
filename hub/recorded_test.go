package hub_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/hub/hubtest"
	"github.com/a6afc2ce/hermes-hub/internal/testkit"
	"github.com/a6afc2ce/hermes-hub/outbox"
	"github.com/a6afc2ce/hermes-hub/store"
)

// syncedFile keeps what was written to an outbound mirror file and what of
// it an fsync covered.
type syncedFile struct {
	f      *os.File
	mu     *sync.Mutex
	w      *bytes.Buffer // written
	synced *[]byte       // written as of the last fsync
	syncs  *int
}

func (s syncedFile) Write(p []byte) (int, error) {
	n, err := s.f.Write(p)
	s.mu.Lock()
	s.w.Write(p[:n])
	s.mu.Unlock()
	return n, err
}

func (s syncedFile) Sync() error {
	s.mu.Lock()
	w := bytes.Clone(s.w.Bytes())
	s.mu.Unlock()
	err := s.f.Sync()
	s.mu.Lock()
	if err == nil {
		*s.synced = w
	}
	*s.syncs++
	s.mu.Unlock()
	return err
}

func (s syncedFile) Close() error { return s.f.Close() }

// mirrorCheck is an outbox observer after the hub's own that checks each
// chunk it hears of is already in the outbound mirror, fsynced.
type mirrorCheck struct {
	outbox.NopEvents
	t      *testing.T
	mu     *sync.Mutex
	synced *[]byte

	got chan string
}

func (m *mirrorCheck) Delivered(e *outbox.Entry, _ outbox.Receipt) {
	m.mu.Lock()
	in := bytes.Contains(*m.synced, []byte(`"`+e.ID+`"`))
	m.mu.Unlock()
	if !in {
		m.t.Errorf("%s heard of before its outbound mirror record was fsynced", e.ID)
	}
	m.got <- e.ID
}

// recordedWeb is a web sender whose delivery is the outbox's record.
type recordedWeb struct{}

func (recordedWeb) Send(ctx context.Context, e *outbox.Entry) (outbox.Receipt, error) {
	return outbox.Receipt{}, ctx.Err()
}
func (recordedWeb) DeliveryIsRecord() {}

// TestMirrorRecordsBatchedDeliveries: the chunks of a target whose sender is
// an outbox.RecordedSender are mirrored in queue order, each once, with one
// fsync per batch rather than per chunk; every one is fsynced before any
// later observer hears of it and before it is marked delivered.
func TestMirrorRecordsBatchedDeliveries(t *testing.T) {
	ws := t.TempDir()
	var (
		mu     sync.Mutex
		w      bytes.Buffer
		synced []byte
		syncs  int
	)
	check := &mirrorCheck{t: t, mu: &mu, synced: &synced, got: make(chan string, 1000)}
	he := hubtest.Open(t, testConfig(t, ws, filepath.Join(ws, ".hub")), hubtest.Options{Runtime: hub.RuntimeOptions{
		OutboxEvents: check,
		MirrorOpenFile: func(root *os.Root, name string, flag int, perm os.FileMode) (store.MirrorFile, error) {
			f, err := root.OpenFile(name, flag, perm)
			if err != nil || filepath.Base(name) != "outbound.jsonl" {
				return f, err
			}
			return syncedFile{f: f, mu: &mu, w: &w, synced: &synced, syncs: &syncs}, nil
		},
	}})
	rt := he.Runtime
	if err := rt.Mux.Handle("web", recordedWeb{}); err != nil {
		t.Fatal(err)
	}
	const n = 300
	es := make([]outbox.Entry, n)
	var want []string
	for i := range es {
		es[i] = outbox.Entry{
			ID: outbox.ID(outbox.KindReply, "web.m1", chat.WebKey, i), Kind: outbox.KindReply, TurnID: "web.m1",
			Target: chat.WebKey, Index: i, Total: n, Text: fmt.Sprintf("chunk %d", i),
		}
		want = append(want, es[i].ID)
	}
	// Enqueued before the dispatcher starts: its first batch finds them.
	if _, err := rt.Outbox.Enqueue(context.Background(), es); err != nil {
		t.Fatal(err)
	}
	he.Start(t)
	var got []string
	for range n {
		select {
		case id := <-check.got:
			got = append(got, id)
		case <-time.After(testkit.Wait):
			t.Fatalf("%d of %d chunks heard of", len(got), n)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("heard of %d chunks, not the %d in queue order once each", len(got), n)
	}
	testkit.WaitFor(t, "every chunk marked", func() bool {
		for _, id := range want {
			if e, err := rt.Outbox.Store().Get(context.Background(), id); err != nil || e.State != outbox.StateDelivered {
				return false
			}
		}
		return true
	})
	mu.Lock()
	lines := bytes.Split(bytes.TrimSpace(w.Bytes()), []byte("\n"))
	s := syncs
	mu.Unlock()
	if len(lines) != n {
		t.Fatalf("%d outbound mirror lines, want %d", len(lines), n)
	}
	for i, l := range lines {
		if !bytes.Contains(l, []byte(`"`+want[i]+`"`)) {
			t.Fatalf("mirror line %d is not %s: %s", i, want[i], l)
		}
	}
	// 300 chunks in batches of at most 256: two fsyncs, a few more if the
	// machine is slow to hand the queue over; one per chunk without batches.
	if s > n/10 {
		t.Fatalf("%d outbound fsyncs for %d chunks: not batched", s, n)
	}
}
