package main

import (
	"fmt"
	"github.com/a6afc2ce/hermes-hub/chat"
	"log/slog"
	"net/http"

	"github.com/a6afc2ce/hermes-hub/adapters/discord"
	"github.com/a6afc2ce/hermes-hub/adapters/telegram"
	"github.com/a6afc2ce/hermes-hub/adapters/web"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/hub"
)

// platformAdapters builds the Telegram and Discord adapters the
// configuration enables and registers their senders.
func platformAdapters(cfg *config.Config, rt *hub.Runtime, webSrv *web.Server, logger *slog.Logger) ([]hub.Adapter, error) {
	var out []hub.Adapter
	if cfg.Telegram.Enabled {
		var mount func(string, http.Handler)
		if webSrv != nil {
			mount = webSrv.Mount
		}
		ad, err := telegram.New(telegram.Options{
			Config: cfg.Telegram, PublicURL: cfg.Web.PublicURL, Mount: mount, Logger: logger,
			Intake: rt.Hub, Cursors: rt.State.Cursors("telegram"), Status: rt.Board.Reporter("telegram"),
		})
		if err != nil {
			return nil, fmt.Errorf("telegram: %w", err)
		}
		if err := rt.Mux.Handle("chat:telegram", ad.Sender()); err != nil {
			return nil, err
		}
		rt.Hub.SetProgressView(chat.Telegram, ad.ProgressView())
		out = append(out, ad)
	}
	if cfg.Discord.Enabled {
		ad, err := discord.New(discord.Options{Config: cfg.Discord, Intake: rt.Hub, Status: rt.Board.Reporter("discord"), Logger: logger})
		if err != nil {
			return nil, fmt.Errorf("discord: %w", err)
		}
		if err := rt.Mux.Handle("chat:discord", ad.Sender()); err != nil {
			return nil, err
		}
		rt.Hub.SetProgressView(chat.Discord, ad.ProgressView())
		out = append(out, ad)
	}
	return out, nil
}
