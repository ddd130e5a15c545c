package main

import (
	"log/slog"
	"net/http"

	"github.com/a6afc2ce/hermes-hub/adapters/discord"
	"github.com/a6afc2ce/hermes-hub/adapters/telegram"
	"github.com/a6afc2ce/hermes-hub/adapters/web"
	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/hub"
)

// attachPlatforms builds every platform the configuration enables and
// attaches each to the runtime (hub.Runtime.Attach: its adapter, sender and
// progress view at once): the web panel, whose server it returns (nil when
// web.enabled is off), then Telegram and Discord. It is the one place a
// platform is wired; webOpts are the panel's options (its intake, admin
// API, probes), which it completes with its status reporter.
func attachPlatforms(cfg *config.Config, rt *hub.Runtime, webOpts web.Options, logger *slog.Logger) (*web.Server, error) {
	var webSrv *web.Server
	if *cfg.Web.Enabled {
		webOpts.Status = rt.Board.Reporter(string(chat.Web))
		s, err := web.New(webOpts)
		if err != nil {
			return nil, err
		}
		if err := rt.Attach(s.Platform()); err != nil {
			return nil, err
		}
		webSrv = s
	}
	if cfg.Telegram.Enabled {
		var mount func(string, http.Handler)
		if webSrv != nil {
			mount = webSrv.Mount
		}
		ad, err := telegram.New(telegram.Options{
			Config: cfg.Telegram, PublicURL: cfg.Web.PublicURL, Mount: mount, Logger: logger,
			Intake: rt.Hub, Cursors: rt.State.Cursors(string(chat.Telegram)), Status: rt.Board.Reporter(string(chat.Telegram)),
		})
		if err != nil {
			return nil, err
		}
		if err := rt.Attach(ad.Platform()); err != nil {
			return nil, err
		}
	}
	if cfg.Discord.Enabled {
		ad, err := discord.New(discord.Options{Config: cfg.Discord, Intake: rt.Hub, Status: rt.Board.Reporter(string(chat.Discord)), Logger: logger})
		if err != nil {
			return nil, err
		}
		if err := rt.Attach(ad.Platform()); err != nil {
			return nil, err
		}
	}
	return webSrv, nil
}
