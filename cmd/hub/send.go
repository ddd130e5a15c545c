package main

import (
	"fmt"
	"strings"

	"github.com/a6afc2ce/hermes-hub/admin"
)

func runSend(env *cliEnv, args []string) error {
	var turn *string
	return withAdmin(env, "send", "hub send [--turn ID] TEXT...\n\nDelivers TEXT to every delivery target (see hub targets). With --turn, sending the same turn again is a no-op per target.", args, func(f *flagSet) {
		turn = f.String("turn", "", "turn id that makes a resend idempotent")
	}, func(c *adminClient, pos []string) error {
		text := strings.Join(pos, " ")
		if strings.TrimSpace(text) == "" {
			return usagef("give the TEXT to send")
		}
		var res admin.DeliverResult
		if err := c.do("POST", "/api/deliver", nil, admin.DeliverRequest{Text: text, TurnID: *turn}, &res); err != nil {
			return err
		}
		fmt.Fprintf(env.stdout, "Turn %s: %d %s enqueued\n", res.TurnID, len(res.Outbox), plural(len(res.Outbox), "chunk", "chunks"))
		if res.Note != "" {
			fmt.Fprintln(env.stdout, res.Note)
		}
		return nil
	})
}
