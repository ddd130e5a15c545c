package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/a6afc2ce/hermes-hub/adapters/discord"
	"github.com/a6afc2ce/hermes-hub/adapters/telegram"
	"github.com/a6afc2ce/hermes-hub/config"
)

// tokenCheckTimeout bounds each platform's token check in hub doctor.
const tokenCheckTimeout = 5 * time.Second

// tokenCheck is how hub doctor checks one platform's token: its shape,
// then whom the platform's API says it belongs to.
type tokenCheck struct {
	name    string // the platform, as the doctor's line names it
	key     string // the token's key
	env     string // the environment variable the examples use
	api     string // the API base the check asks (its key's value)
	apiKey  string
	enabled bool
	token   config.Secret
	shape   func(token string) error
	ask     func(ctx context.Context, token, api string) (bot string, err error)
	// rejected is the error ask wraps for a token the platform refused;
	// renew says where a valid token comes from.
	rejected error
	renew    string
}

func tokenChecks(cfg *config.Config) []tokenCheck {
	return []tokenCheck{{
		name: "telegram", key: "telegram.token", env: "TELEGRAM_BOT_TOKEN",
		api: cfg.Telegram.APIEndpoint, apiKey: "telegram.api_endpoint",
		enabled: cfg.Telegram.Enabled, token: cfg.Telegram.Token,
		shape: telegram.CheckTokenShape, ask: telegram.CheckToken, rejected: telegram.ErrTokenRejected,
		renew: "ask @BotFather for the bot's current token (/token) and set it",
	}, {
		name: "discord", key: "discord.token", env: "DISCORD_BOT_TOKEN",
		api: cfg.Discord.APIBase, apiKey: "discord.api_base",
		enabled: cfg.Discord.Enabled, token: cfg.Discord.Token,
		shape: discord.CheckTokenShape, ask: discord.CheckToken, rejected: discord.ErrTokenRejected,
		renew: "reset the token on the Bot page of the application in the developer portal and set it",
	}}
}

// doctorTokens says whether the web token is set and, for each enabled
// platform, whether its token has the platform's shape and what the
// platform's API says of it (within tokenCheckTimeout): the bot's name,
// rejected, or unreachable. No token is ever printed.
func doctorTokens(r *doctorReport, cfg *config.Config) {
	if cfg.Web.Token.IsSet() {
		r.ok("web token", "set")
	} else {
		r.ok("web token", "not set: a new one is generated at each start and a login URL printed")
	}
	for _, c := range tokenChecks(cfg) {
		c.run(r)
	}
	if len(cfg.Access.Grants) == 0 && len(cfg.Access.DefaultRoles) == 0 {
		r.warn("access", "no identity has a role: everyone is denied", `grant one under access.grants, e.g. "telegram:<your user id>": [admin] (send /whoami to the bot to learn it)`)
	}
}

func (c tokenCheck) run(r *doctorReport) {
	tok := c.token.Reveal()
	switch {
	case !c.enabled:
		r.ok(c.name, "disabled")
		return
	case tok == "":
		r.fail(c.name, "enabled but the token is empty", "export "+c.env+" and set token: ${"+c.env+"}")
		return
	}
	if err := c.shape(tok); err != nil {
		r.fail(c.name, c.key+" is "+err.Error(), c.renew+" ("+c.env+")")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), tokenCheckTimeout)
	defer cancel()
	bot, err := c.ask(ctx, tok, c.api)
	switch {
	case errors.Is(err, c.rejected):
		r.fail(c.name, fmt.Sprintf("%s: %v, at %s", c.key, err, c.api), "the token was revoked, reset or mistyped: "+c.renew+" ("+c.env+")")
	case err != nil:
		r.warn(c.name, fmt.Sprintf("enabled; the token could not be checked, %s is unreachable or did not answer as the platform's API (within %s): %v", c.api, tokenCheckTimeout, err),
			"check this machine's network and "+c.apiKey+"; the hub keeps trying to connect while it runs")
	default:
		r.ok(c.name, "enabled, the token is accepted: the bot "+bot)
	}
}

// doctorMCP says whether /mcp is served, to which agents, and which of
// them no role lets call anything.
func doctorMCP(r *doctorReport, cfg *config.Config) {
	m := cfg.MCP
	if !m.Enabled {
		r.ok("mcp", "/mcp is off (mcp.enabled); `hub mcp` serves the verbs over stdio to an agent on this machine")
		return
	}
	names := make([]string, 0, len(m.Agents))
	for n := range m.Agents {
		names = append(names, n)
	}
	sort.Strings(names)
	web := "the web token is refused there (mcp.accept_web_token)"
	if m.AcceptWebToken {
		web = "the web token is accepted there, as the identity web"
	}
	r.ok("mcp", fmt.Sprintf("/mcp on %s: %d %s (%s), each with its own token; %s",
		cfg.Web.Listen, len(names), plural(len(names), "agent", "agents"), strings.Join(names, ", "), web))
	for _, n := range names {
		id := "agent:" + n
		if len(cfg.Access.Grants[id]) == 0 && len(cfg.Access.DefaultRoles) == 0 {
			r.warn("mcp", id+" has no role: every tool it calls is refused",
				fmt.Sprintf(`grant it one under access.grants, e.g. "%s": [reader]`, id))
		}
	}
}
