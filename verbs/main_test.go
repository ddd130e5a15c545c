package verbs_test

import (
	"os"
	"testing"

	"github.com/a6afc2ce/hermes-hub/verbs"
)

// TestMain lets this test binary serve as proc.run's supervisor, as the hub
// binary does.
func TestMain(m *testing.M) {
	verbs.MaybeRunSupervisor()
	os.Exit(m.Run())
}
