package main

import (
	"fmt"

	"github.com/a6afc2ce/hermes-hub/adapters/discord"
)

const discordUsage = `hub discord commands

Prints the slash commands, derived from the verbs, that the hub registers
with Discord (bulk overwrite) when it starts.`

func runDiscord(env *cliEnv, args []string) error {
	f := newFlags(env, "discord", discordUsage)
	pos, err := f.parse(args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || pos[0] != "commands" {
		return usagef("usage: hub discord commands")
	}
	tc, err := registryOnly()
	if err != nil {
		return err
	}
	defer tc.Close()
	out, err := discord.CommandsJSON(tc.exec.Registry())
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(env.stdout, "%s\n", out)
	return err
}
