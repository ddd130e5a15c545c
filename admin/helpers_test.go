package admin_test

import (
	"testing"

	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/hub/hubtest"
	"github.com/a6afc2ce/hermes-hub/store"
)

// openRuntime opens and starts a hub runtime on state with no verbs (the
// admin API runs none) and a platform sender that accepts every chunk.
func openRuntime(t *testing.T, ws, state string, clk clock.Clock) *hub.Runtime {
	t.Helper()
	he := hubtest.Open(t, hubtest.Config(t, ws, state), hubtest.Options{
		Runtime:  hub.RuntimeOptions{Clock: clk},
		Register: func(*executor.Registry, *config.Config, *store.State) error { return nil },
	})
	hubtest.NewRecorder().HandleAll(t, he.Runtime)
	he.Start(t)
	return he.Runtime
}
