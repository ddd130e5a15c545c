package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/verbs"
)

func runSchema(env *cliEnv, args []string) error {
	f := newFlags(env, "schema", "hub schema [VERB] [--json] | hub schema --markdown\n\nPrints the argument and result types of VERB, or of every verb.")
	asJSON := f.Bool("json", false, "print the structured schema as JSON")
	markdown := f.Bool("markdown", false, "print the instructions an agent needs to use the verbs")
	configPath := f.String("config", "", "configuration file, for --markdown (whether session workspaces are in use)")
	pos, err := f.parse(args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return usagef("at most one VERB, got %d", len(pos))
	}
	tc, err := registryOnly()
	if err != nil {
		return err
	}
	defer tc.Close()
	reg := tc.exec.Registry()
	if *markdown {
		if len(pos) > 0 {
			return usagef("--markdown describes every verb; give no VERB")
		}
		cfg, err := config.Load(config.Discover(*configPath))
		if err != nil {
			return err
		}
		fmt.Fprint(env.stdout, verbs.AgentMarkdown(reg, cfg.Sessions.Mode == "session" || len(cfg.Sessions.ByChat) > 0 || len(cfg.Sessions.ByRole) > 0))
		return nil
	}
	schemas := reg.Schemas()
	if len(pos) == 1 {
		s, ok := reg.Schema(pos[0])
		if !ok {
			msg := fmt.Sprintf("unknown verb %q", pos[0])
			if sug := reg.Suggest(pos[0]); len(sug) > 0 {
				msg += " (did you mean " + strings.Join(sug, ", ") + "?)"
			}
			return usagef("%s; run `hub verbs` for the list", msg)
		}
		schemas = schemas[:0]
		schemas = append(schemas, s)
	}
	switch {
	case *asJSON:
		var v any = schemas
		if len(pos) == 1 {
			v = schemas[0]
		}
		b, _ := json.MarshalIndent(v, "", "  ")
		fmt.Fprintf(env.stdout, "%s\n", b)
	default:
		for i, s := range schemas {
			if i > 0 {
				fmt.Fprintln(env.stdout)
			}
			fmt.Fprintf(env.stdout, "// %s: %s\n%s", s.Name, s.Summary, s.IDL)
		}
	}
	return nil
}
