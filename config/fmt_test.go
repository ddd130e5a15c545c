package config

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
)

// fmtAll renders cfg every way a careless caller might: %v, %+v, %#v, JSON, slog.
func fmtAll(cfg Config) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v %+v %#v", cfg, cfg, cfg)
	j, _ := json.Marshal(cfg)
	b.Write(j)
	h := slog.NewTextHandler(&b, nil)
	slog.New(h).Info("cfg", "telegram", cfg.Telegram, "token", cfg.Telegram.Token)
	return b.String()
}
