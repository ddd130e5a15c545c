package proc_test

import (
	"os"
	"testing"

	"github.com/a6afc2ce/hermes-hub/verbs/proc"
)

// TestMain lets this test binary serve as the supervisor, as the hub
// binary does.
func TestMain(m *testing.M) {
	proc.MaybeRunSupervisor()
	os.Exit(m.Run())
}
