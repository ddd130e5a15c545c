package admin_test

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/a6afc2ce/hermes-hub/admin"
	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/outbox"
	"github.com/a6afc2ce/hermes-hub/store"
)

// openRuntime opens and starts a hub runtime on state with no verbs (the
// admin API runs none) and a platform sender that accepts every chunk.
func openRuntime(t *testing.T, ws, state string, clk clock.Clock) *hub.Runtime {
	t.Helper()
	cfg, err := config.LoadWith("", func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	cfg.Workspace, cfg.StateDir = ws, state
	rt, err := hub.Open(cfg, executor.New(executor.NewRegistry(), executor.Options{}), hub.RuntimeOptions{
		Clock: clk, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	accept := outbox.SenderFunc(func(context.Context, *outbox.Entry) (outbox.Receipt, error) { return outbox.Receipt{}, nil })
	for _, p := range []string{"chat:telegram", "chat:discord", "web"} {
		if err := rt.Mux.Handle(p, accept); err != nil {
			t.Fatal(err)
		}
	}
	if err := rt.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return rt
}

// newAPI builds the admin API over rt's parts as `hub serve` does.
func newAPI(rt *hub.Runtime) *admin.API {
	return &admin.API{
		Outbox:           rt.Outbox,
		Targets:          rt.Targets,
		Directory:        rt.Directory,
		SetDirectory:     rt.SetDirectory,
		DirectoryPath:    rt.State.Path(store.ChannelDirectory),
		DirectoryOptions: rt.DirectoryOptions(),
		FlowsDir:         rt.State.Path(store.FlowsDir),
		Deliver:          rt.Hub.Deliver,
		NewTurnID:        hub.NewTurnID,
		Status:           rt.Status,
		Running:          rt.Running,
		Off:              rt.PlatformOff,
		Clock:            rt.Clock(),
	}
}
