package verbs_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/a6afc2ce/hermes-hub/verbs"
)

// TestMain lets this test binary serve as proc.run's supervisor, as the hub
// binary does.
func TestMain(m *testing.M) {
	verbs.MaybeRunSupervisor()
	if dir := os.Getenv(editCrashEnv); dir != "" {
		err := editCrashChild(dir)
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}
