//go:build !unix

package verbs_test

import (
	"testing"

	"github.com/a6afc2ce/hermes-hub/internal/testkit"
)

func mkfifo(t *testing.T, _ string) {
	t.Helper()
	testkit.Unavailable(t, "needs named pipes (mkfifo), which this system does not have")
}
