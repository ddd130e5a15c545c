package lab

import (
	"testing"

	"github.com/a6afc2ce/hermes-hub/outbox"
)

// TestCheckConfirms: a confirmed held call whose marker is in confirm.log
// once, one cut short by a kill (its run answered with the restart notice)
// that never ran, and a cancelled one whose marker is not there pass; a
// confirmed call run twice, one answered with its result that never ran,
// and a cancelled one that ran are reported as "confirmed once".
func TestCheckConfirms(t *testing.T) {
	b := newObs()
	b.o.Confirms = []ConfirmCall{{Marker: "cf000001z", ID: "aa", Pressed: "run"}, {Marker: "cf000002z", ID: "bb", Pressed: "cancel"}, {Marker: "cf000003z", ID: "cc", Pressed: "run"}}
	chat := mustKey("chat:telegram:-2980")
	b.o.Delivered = append(b.o.Delivered,
		outbox.Entry{ID: outbox.ID(outbox.KindReply, "confirm.aa", chat, 0), State: outbox.StateDelivered},
		outbox.Entry{ID: outbox.ID(outbox.KindNotice, "confirm.cc", chat, 0), State: outbox.StateDelivered})
	check := func(file string) *checker {
		b.o.Files[confirmFile] = file
		c := &checker{o: b.o}
		c.index()
		c.checkConfirms()
		return c
	}
	if c := check("cf000001z\n"); len(c.v) != 0 || c.fig.ConfirmRuns != 1 || c.fig.ConfirmCancels != 1 || c.fig.ConfirmInterrupted != 1 {
		t.Fatalf("violations %v, figures %+v", c.v, c.fig)
	}
	for name, file := range map[string]string{
		"confirmed, ran twice":           "cf000001z\ncf000001z\n",
		"confirmed, answered, never ran": "",
		"cancelled, but it ran":          "cf000001z\ncf000002z\n",
	} {
		if c := check(file); !has(c.v, "confirmed once") {
			t.Errorf("%s: not reported: %v", name, c.v)
		}
	}
}
