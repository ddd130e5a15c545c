package verbs_test

import (
	"testing"

	"github.com/a6afc2ce/hermes-hub/verbs"
	"github.com/a6afc2ce/hermes-hub/verbs/internal/verbtest"
)

// A session workspace that allows proc.run runs its programs as the same
// user.
func TestProcRunInSessionAsUser(t *testing.T) {
	verbtest.AsRoot(t)
	u := verbtest.DefaultProcUser(t)
	e := newSessEnv(t, func(o *verbs.SessionOptions, e *sessEnv) {
		o.AllowProc = true
		e.verbOpts = func(v *verbs.Options) { v.User = u }
	})
	r := sok[verbs.ProcRunResult](e, chatA, "proc.run", verbs.ProcRunArgs{Executable: "id", Arguments: []string{"-u"}})
	if r.ExitCode != 0 || r.StdoutTail != "65534\n" {
		t.Fatalf("id -u in a session: %+v", r)
	}
}
