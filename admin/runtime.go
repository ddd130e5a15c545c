package admin

import (
	"context"
	"io"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/outbox"
	"github.com/a6afc2ce/hermes-hub/store"
)

// ForRuntime builds the admin API over a hub runtime's parts. The admin
// socket, the web panel and the CLI without a running hub all serve one
// built here, so they share the channel directory in use and answer alike.
func ForRuntime(rt *hub.Runtime) *API {
	return &API{
		Outbox:       rt.Outbox,
		Targets:      rt.Targets,
		Directory:    rt.Directory,
		SetDirectory: rt.SetDirectory,
		State:        rt.State.StateDir,
		// A rebuilt directory keeps the runtime's clock and logger.
		DirectoryOptions: rt.DirectoryOptions(),
		Deliver:          rt.Hub.Deliver,
		NewTurnID:        func(prefix string) string { return hub.NewTurnID(prefix, rt.Clock().Now()) },
		Status:           rt.Status,
		Running:          rt.Running,
		Off:              rt.PlatformOff,
		CheckTarget: func(k chat.Key) error {
			return outbox.CheckLocalTarget(rt.State.Dir(), rt.Config.Outbox.LocalRoots, k)
		},
		Allowed:       rt.Hub.Access().Permitted,
		ForbiddenHint: rt.Hub.Access().ForbiddenHint,
		AccessAdmin:   rt.Hub,
		Reload:        rt.Reload,
		MaxBody:       int64(rt.Config.Web.MaxBodyBytes),
		Clock:         rt.Clock(),
		PruneMirrors:  rt.PruneMirrors,
		Schedules:     rt.Schedules,
		Backup: func(ctx context.Context, w io.Writer, opts store.BackupOptions) error {
			return store.WriteBackup(ctx, w, rt.State, opts)
		},
	}
}
