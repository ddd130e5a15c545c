package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	mcpsurface "github.com/a6afc2ce/hermes-hub/adapters/mcp"
	"github.com/a6afc2ce/hermes-hub/adapters/web"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/store"
)

const mcpUsage = `hub mcp [--config FILE] [--state DIR] [--workspace DIR] [--identity agent:NAME]

Serves the verbs as Model Context Protocol tools over stdio, for an MCP
client that starts the hub itself (docs/mcp.md). Tools are named with '_'
for '.' (fs_readFile). Calls run as the identity agent:local (or
--identity), so access.grants decide which tools it sees and may call.

It opens the state directory like hub serve, so every call is mirrored;
while it runs, hub serve cannot start on the same state. With a hub
running, connect the client to the hub's /mcp endpoint instead.
Logs go to stderr; stdout carries the protocol only.`

func runMCP(env *cliEnv, args []string) error {
	f := newFlags(env, "mcp", mcpUsage)
	var c commonFlags
	c.register(f, true)
	identity := f.String("identity", mcpsurface.DefaultIdentity, "access identity of the calls (agent:<name>)")
	pos, err := f.parse(args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	if err := config.ValidIdentity(*identity); err != nil || !strings.HasPrefix(*identity, "agent:") {
		return usagef("--identity %q is not an agent identity (accepted: agent:<name>, lower-case letters, digits, '-' and '_')", *identity)
	}
	cfg, err := loadConfig(c, config.StdioOnly)
	if err != nil {
		return err
	}
	logger := newLogger(cfg.Log, env.stderr)

	sk, err := openStack(cfg, logger, 500*time.Millisecond)
	if err != nil {
		if errors.Is(err, store.ErrLocked) {
			return fmt.Errorf("%w: a hub runs on this state; connect the MCP client to its /mcp endpoint (mcp.enabled, see docs/mcp.md) instead of starting hub mcp", err)
		}
		return err
	}
	defer sk.Close()
	st, tc := sk.st, sk.tc
	// The runtime is not started: no outbox dispatch and no recovery of chat
	// turns, which belong to hub serve. Calls are mirrored under this run.
	rt, err := hub.Open(cfg, st, tc.exec, hub.RuntimeOptions{Logger: logger, SessionFor: hub.SessionPolicy(cfg.Sessions)})
	if err != nil {
		return err
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		if err := rt.Close(ctx); err != nil {
			logger.Error("shutdown", "err", err)
		}
	}()
	if len(rt.Hub.VerbsFor([]string{*identity})) == 0 {
		logger.Warn("this identity may run no verb, so the client will see no tools; grant it a role in the configuration", "identity", *identity, "grant", hub.GrantLine(*identity, hub.ReaderRole))
	}
	srv, err := mcpsurface.New(mcpsurface.Options{
		Intake: rt.Hub, Identity: *identity, Version: hubVersion(), Logger: logger,
		MaxLineBytes: int(cfg.Web.MaxBodyBytes),
	})
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger.Info("serving MCP on stdio", "identity", *identity, "state", rt.State.Dir(), "workspace", tc.set.Default().Dir(), "run_id", rt.RunID)
	growPipe(env.stdout)
	return srv.RunStdio(ctx, env.stdin, env.stdout)
}

// mountMCP serves /mcp on the web listener (mcp.enabled): each agent's
// token as agent:<name>; the web token as the identity web only with
// mcp.accept_web_token. Wrong tokens count against the listener's
// throttle. close ends its resource subscriptions' watches.
func mountMCP(cfg *config.Config, rt *hub.Runtime, webSrv *web.Server, logger *slog.Logger) (close func(), err error) {
	srv, err := mcpsurface.New(mcpsurface.Options{
		Intake: rt.Hub, Version: hubVersion(),
		Status: rt.Board.Reporter("mcp"), Logger: logger,
	})
	if err != nil {
		return nil, err
	}
	h, err := srv.Handler(mcpsurface.ConfigOptions(cfg.MCP, cfg.Web, web.Identity, webSrv.Token(), webSrv))
	if err != nil {
		return nil, err
	}
	webSrv.Mount("/mcp", h)
	for _, p := range mcpsurface.OAuthPaths {
		webSrv.Mount(p, mcpsurface.NoOAuth())
	}
	return srv.Close, nil
}
