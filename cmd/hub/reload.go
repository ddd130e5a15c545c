package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/store"
	"github.com/a6afc2ce/hermes-hub/workspaces"
)

const reloadUsage = `hub reload [--config FILE] [--state DIR]

Makes the running hub read its configuration file again, as SIGHUP does:
access (roles, grants, default roles, the workspaces a role may use), the
Telegram rates, the session rules (sessions.mode, by_chat, by_role), the
workspace rules (workspaces.by_chat, by_role) and log.level apply from the
next turn; mirror retention (mirror.retention) from the next prune; the
schedules (added, changed and removed) from now.
Prints what changed and what needs a restart (listen addresses, tokens,
enabling a platform, the state and workspace directories, adding, removing
or moving a named workspace, …), and a WARNING naming each way the reload
widens access (a default role, a grant, a role's verbs or workspaces). The
protected configuration and secret files are resolved again, so a file an
editor replaced stays out of the verbs' reach. An invalid file changes nothing: the
error, with its line, is printed and the exit status is 1. Talks to the hub through its admin socket (<state>/hub.sock).`

func runReload(env *cliEnv, args []string) error {
	f := newFlags(env, "reload", reloadUsage)
	var cf commonFlags
	cf.register(f, false)
	pos, err := f.parse(args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	// Only the state directory is needed to find the socket; the hub reads
	// the file itself, so a broken file is reported by the hub. With no hub
	// to ask, the file's own problems are the answer.
	stateDir, cfgErr := cf.state, error(nil)
	if stateDir == "" {
		cfg, err := loadConfig(cf)
		if err != nil {
			cfgErr = err
			stateDir = cmp.Or(config.StateDirOf(config.Discover(cf.config), os.LookupEnv), ".hub")
		} else {
			stateDir = cfg.StateDir
		}
	}
	sock := filepath.Join(stateDir, store.SocketFile)
	c, ok := dialSocket(sock)
	if !ok {
		if cfgErr != nil {
			return fmt.Errorf("%w\nand no running hub answers on %s to reload it: fix the configuration, then start the hub with `hub serve`", cfgErr, sock)
		}
		return fmt.Errorf("no running hub answers on %s: the configuration is read when `hub serve` starts", sock)
	}
	defer c.Close()
	var rep hub.ReloadReport
	if err := c.do("POST", "/api/reload", nil, struct{}{}, &rep); err != nil {
		return err
	}
	fmt.Fprintf(env.stdout, "Reloaded %s: %s\n", rep.File, rep.String())
	return nil
}

// liveConfig is what `hub serve` needs to reload its configuration: how to
// read it again (the file and the command line's overrides), the log level
// to change, and the SIGHUP signals.
type liveConfig struct {
	load  func() (*config.Config, error)
	level *slog.LevelVar
	hup   <-chan os.Signal
}

// newLiveLogger builds the slog logger of the configuration with a level a
// reload can change.
func newLiveLogger(c config.Log, w io.Writer) (*slog.Logger, *slog.LevelVar) {
	lv := new(slog.LevelVar)
	lv.Set(parseLevel(c.Level))
	opts := &slog.HandlerOptions{Level: lv}
	if c.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts)), lv
	}
	return slog.New(slog.NewTextHandler(w, opts)), lv
}

func parseLevel(s string) slog.Level {
	var level slog.Level
	_ = level.UnmarshalText([]byte(s))
	return level
}

// reloadableAdapter is an adapter with settings a reload applies (the
// Telegram rates).
type reloadableAdapter interface {
	Reloadable() hub.Reloadable
}

// enableReload makes rt reloadable with every part `hub serve` has (the
// access policy, the session rules, the log level, the attached platforms'
// adapters' settings),
// resolves the workspaces' protected files again on every reload, and
// reloads on SIGHUP until ctx ends.
func enableReload(ctx context.Context, rt *hub.Runtime, lc liveConfig, sessions *hub.SessionSwitch, set *workspaces.Set, logger *slog.Logger) {
	if lc.load == nil {
		return
	}
	r := rt.EnableReload(lc.load)
	r.Refresh("protect the configuration's files", set.Reprotect)
	r.Register(hub.SessionsReloadable(sessions))
	if lc.level != nil {
		r.Register(hub.Reloadable{Name: "log", Keys: []string{"log.level"}, Apply: func(cfg *config.Config) { lc.level.Set(parseLevel(cfg.Log.Level)) }})
	}
	for _, p := range rt.Platforms() {
		if ra, ok := p.Adapter.(reloadableAdapter); ok {
			r.Register(ra.Reloadable())
		}
	}
	if lc.hup == nil {
		return
	}
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-lc.hup:
				logger.Info("SIGHUP: reloading the configuration")
				if rep, err := rt.Reload(); err == nil {
					logger.Info("reload: " + strings.ReplaceAll(rep.String(), "\n", "; "))
				}
			}
		}
	}()
}
