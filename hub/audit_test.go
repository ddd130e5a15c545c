package hub_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/internal/testkit"
	"github.com/a6afc2ce/hermes-hub/store"
)

// TestAuditOutcomesOfTurns: the records the hub writes say, for an audit
// search, what each turn asked and how it ended, on every surface: a chat
// command's request names its verb and its reply's records carry the
// error code (a failed verb, a refusal), a stranger's message is denied,
// an API call names its verb on both records.
func TestAuditOutcomesOfTurns(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	for _, m := range []struct {
		user, id int
		text     string
	}{
		{1, 1, "/fs.readFile README.md"},
		{1, 2, "/fs.readFile missing.txt"},
		{3, 3, "/proc.run ls"},
		{999, 4, "/fs.listDir ."},
	} {
		if _, err := e.rt.Hub.Handle(ctx, tgMsg(m.user, m.id, m.text)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.rt.Hub.Execute(ctx, hub.APIRequest{Identity: "web", TurnID: "api.1", Input: []byte(`{"verb":"fs.lineCount","arguments":{"path":"nope"}}`)}); err != nil {
		t.Fatal(err)
	}
	e.rec.Wait(t, "chat:telegram:100", 4)
	want := map[string][2]string{ // turn → verb, outcome
		"telegram.100.1": {"fs.readFile", store.OutcomeSucceeded},
		"telegram.100.2": {"fs.readFile", store.OutcomeFailed},
		"telegram.100.3": {"proc.run", store.OutcomeForbidden},
		"telegram.100.4": {"fs.listDir", store.OutcomeDenied},
		"api.1":          {"fs.lineCount", store.OutcomeFailed},
	}
	var got map[string]store.AuditTurn
	testkit.WaitFor(t, "every reply in the mirror", func() bool {
		got = map[string]store.AuditTurn{}
		err := store.SearchMirrors(ctx, flowsRoot(t, filepath.Join(e.state, "flows")), store.AuditQuery{}, func(a store.AuditTurn) error {
			got[a.TurnID] = a
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for id, w := range want {
			if got[id].Outcome != w[1] {
				return false
			}
		}
		return true
	})
	for id, w := range want {
		if got[id].Verb != w[0] {
			t.Errorf("%s: verb %q, want %q", id, got[id].Verb, w[0])
		}
	}
	if c := got["telegram.100.2"].ErrorCode; c != "not_found" {
		t.Errorf("the failed read's code: %q", c)
	}
}
