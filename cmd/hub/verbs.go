package main

import (
	"encoding/json"
	"fmt"
)

func runVerbs(env *cliEnv, args []string) error {
	f := newFlags(env, "verbs", "hub verbs [--json]\n\nLists every verb with a one-line description.")
	asJSON := f.Bool("json", false, "print the structured schemas as JSON")
	pos, err := f.parse(args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	tc, err := registryOnly()
	if err != nil {
		return err
	}
	defer tc.Close()
	x := tc.exec
	if *asJSON {
		b, _ := json.MarshalIndent(x.Registry().Schemas(), "", "  ")
		fmt.Fprintf(env.stdout, "%s\n", b)
		return nil
	}
	width := 0
	for _, v := range x.Registry().Verbs() {
		width = max(width, len(v.Name))
	}
	for _, v := range x.Registry().Verbs() {
		ro := ""
		if v.ReadOnly {
			ro = " (read-only)"
		}
		fmt.Fprintf(env.stdout, "%-*s  %s%s\n", width, v.Name, v.Summary, ro)
	}
	return nil
}
