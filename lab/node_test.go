package lab

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a6afc2ce/hermes-hub/adapters/telegram/telegramtest"
	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/outbox"
)

// checkNodes reports each way the remote turns can break an invariant,
// and passes a consistent run.
func TestCheckNodes(t *testing.T) {
	const done, offline, cut = "mk000001z", "mk000002z", "mk000003z"
	turn := func(id, marker string) *Turn {
		return &Turn{TurnID: "telegram.-2001." + id, Marker: marker, Action: "remote-write", Delivered: true}
	}
	for _, tc := range []struct {
		name   string
		file   string // n1/remote.log
		answer map[string]string
		want   string // "" for no violation
		// cluster: the hub's NATS is a cluster; a remote turn not
		// answered with its marker must be answered that it may or may
		// not have completed.
		cluster bool
	}{
		{"consistent", done + "\n" + cut + "\n", nil, "", false},
		{"consistent on a cluster", done + "\n" + cut + "\n", nil, "", true},
		{"ran twice", done + "\n" + done + "\n" + cut + "\n", nil, "appears 2 times", false},
		{"offline call ran", done + "\n" + offline + "\n" + cut + "\n", nil, "ran when node n1 came back", false},
		{"answered with its output, no side effect", cut + "\n", nil, "the marker is not in", false},
		{"cut answered otherwise", done + "\n" + cut + "\n", map[string]string{cut: "<pre>" + cut + "</pre>"}, "does not carry", false},
		{"on a cluster, answered neither", done + "\n" + cut + "\n", map[string]string{done: "⚠ the call failed"}, "neither with its marker nor that it may or may not have completed", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &world{sc: &Scenario{Hub: HubSettings{Nodes: 1}}, ws: t.TempDir(), logf: func(string, ...any) {}}
			if tc.cluster {
				w.cluster = &labCluster{}
			}
			if err := os.MkdirAll(filepath.Join(w.ws, "n1"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(w.ws, "n1", remoteFile), []byte(tc.file), 0o644); err != nil {
				t.Fatal(err)
			}
			tDone, tOff, tCut := turn("1", done), turn("2", offline), turn("3", cut)
			w.nodes = &labNodes{turns: map[string]*remoteTurn{
				tDone.TurnID: {turn: tDone, node: "n1"}, tOff.TurnID: {turn: tOff, node: "n1"}, tCut.TurnID: {turn: tCut, node: "n1"},
			}, cuts: []nodeCut{{turn: tCut, answer: []string{"may or may not have completed"}}},
				queued: []queuedCheck{{node: "n1", turns: []*Turn{tOff}, want: answerOffline}}}
			answers := map[string]string{
				done:    "<code>sh -c \"echo " + done + "\"</code> — exit 0 ✓\nstdout:\n<pre>" + done + "\n</pre>",
				offline: "⚠ Node n1 is offline; the call did not run",
				cut:     "⚠ node n1 was interrupted while it ran this call; it may or may not have completed",
			}
			for k, v := range tc.answer {
				answers[k] = v
			}
			var o Observation
			for i, tt := range []*Turn{tDone, tOff, tCut} {
				o.Delivered = append(o.Delivered, outbox.Entry{TurnID: tt.TurnID, Target: chat.ChatKey(chat.Telegram, "-2001", ""), PlatformMessageID: itoa(i + 1)})
				o.Telegram = append(o.Telegram, telegramtest.Message{ChatID: "-2001", MessageID: int64(i + 1), Text: answers[tt.Marker]})
			}
			v := w.checkNodes(o)
			if tc.want == "" {
				if len(v) != 0 {
					t.Fatalf("violations: %v", v)
				}
				return
			}
			if len(v) == 0 || !strings.Contains(v[0].Detail, tc.want) {
				t.Fatalf("violations %v, want one saying %q", v, tc.want)
			}
		})
	}
}
