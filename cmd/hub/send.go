package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/a6afc2ce/hermes-hub/admin"
)

const sendUsage = `hub send [--turn ID] TEXT...

Delivers TEXT to every delivery target (see hub targets). With --turn, sending the same turn again is a no-op per target.
The delivery is mirrored as kind "cli" with the local user (see docs/state.md).`

func runSend(env *cliEnv, args []string) error {
	f := newFlags(env, "send", sendUsage)
	var cf commonFlags
	cf.register(f, false)
	turn := f.String("turn", "", "turn id that makes a resend idempotent")
	pos, err := f.parse(args)
	if err != nil {
		return err
	}
	text := strings.Join(pos, " ")
	if strings.TrimSpace(text) == "" {
		return usagef("give the TEXT to send")
	}
	cfg, err := loadConfig(cf)
	if err != nil {
		return err
	}
	c, err := openAdmin(cfg)
	if err != nil {
		return err
	}
	defer c.Close()
	mir := newCLIMirror(cfg)
	defer mir.Close()
	res, err := mir.deliver(context.Background(), "send", text, *turn, func() (admin.DeliverResult, error) {
		var res admin.DeliverResult
		err := c.do("POST", "/api/deliver", nil, admin.DeliverRequest{Text: text, TurnID: *turn}, &res)
		return res, err
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(env.stdout, "Turn %s: %d %s enqueued\n", res.TurnID, len(res.Outbox), plural(len(res.Outbox), "chunk", "chunks"))
	if res.Note != "" {
		fmt.Fprintln(env.stdout, res.Note)
	}
	return nil
}
