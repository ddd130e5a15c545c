package confine_test

import (
	"os"
	"testing"

	"github.com/a6afc2ce/hermes-hub/verbs/proc"
)

// TestMain lets this test binary serve as proc.run's supervisor, as the hub
// binary does: the verbs these tests call include proc.run.
func TestMain(m *testing.M) {
	proc.MaybeRunSupervisor()
	os.Exit(m.Run())
}
