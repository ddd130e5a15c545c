package hub

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/executor"
)

// Commands are the named commands of the configuration (the commands
// section, docs/chatops.md), each an alias verb cmd.<name> in the
// registry: listed, described and offered like any verb (menus, slash
// commands, forms, tools, /help), granted by its own permission
// (cmd.<name>, or a glob such as cmd.*), and standing for one fixed call
// with its typed parameters in place. Running one does not need the
// permission of the verb it calls: the configuration that wrote the call
// vouches for it (docs/security.md). A reload replaces the whole set at
// once.
type Commands struct {
	reg *executor.Registry
	mu  sync.Mutex // serialises Replace
	set atomic.Pointer[map[string]config.Command]
}

// NewCommands returns the named commands of reg's hub, none yet.
func NewCommands(reg *executor.Registry) *Commands {
	c := &Commands{reg: reg}
	c.set.Store(&map[string]config.Command{})
	return c
}

// Replace installs cmds as the registry's cmd.* verbs, replacing the
// previous set whole; on an error (a command whose verb this hub does not
// have, a name a built-in takes) nothing changes.
func (c *Commands) Replace(cmds config.Commands) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	aliases, set, err := c.aliases(cmds)
	if err != nil {
		return err
	}
	if err := c.reg.ReplaceAliases(config.CommandPrefix, aliases); err != nil {
		return fmt.Errorf("commands: %w", err)
	}
	c.set.Store(&set)
	return nil
}

// Check refuses the commands of cfg that this hub cannot install (what
// Replace would refuse), changing nothing.
func (c *Commands) Check(cfg *config.Config) error {
	_, _, err := c.aliases(cfg.Commands)
	if err != nil {
		return err
	}
	return nil
}

// Lookup returns the command whose verb is name (cmd.deploy).
func (c *Commands) Lookup(verb string) (config.Command, bool) {
	name, ok := strings.CutPrefix(strings.ToLower(verb), config.CommandPrefix)
	if !ok {
		return config.Command{}, false
	}
	cmd, ok := (*c.set.Load())[name]
	return cmd, ok
}

// aliases builds the alias of each command, checking its name against
// the built-ins (a command named help would never be reached from chat).
func (c *Commands) aliases(cmds config.Commands) ([]executor.Alias, map[string]config.Command, error) {
	var out []executor.Alias
	set := make(map[string]config.Command, len(cmds))
	var errs []error
	for _, name := range sortedNames(cmds) {
		cmd := cmds[name]
		if err := c.typeCheck(cmd); err != nil {
			errs = append(errs, fmt.Errorf("commands.%s.run: %w", name, err))
		}
		for _, b := range executor.Builtins {
			if name == b {
				errs = append(errs, fmt.Errorf("commands.%s: %s is a built-in of the chat (accepted: a name no built-in has: %s)", name, name, strings.Join(executor.Builtins, ", ")))
			}
		}
		set[name] = cmd
		out = append(out, executor.Alias{
			Info:      executor.Info{Name: config.CommandPrefix + name, Summary: commandSummary(name, cmd)},
			Arguments: commandFields(cmd),
			Target:    cmd.Run.Verb,
			Expand: func(args json.RawMessage) (executor.Envelope, error) {
				verb, a, err := cmd.Call(args)
				if err != nil {
					return executor.Envelope{}, executor.Errorf(executor.CodeInvalidArguments, "Invalid arguments for %s%s: %v", config.CommandPrefix, name, err)
				}
				return executor.Envelope{Verb: verb, Arguments: a}, nil
			},
		})
	}
	return out, set, errors.Join(errs...)
}

// typeCheck refuses a command whose call its verb would refuse whatever
// the parameters (a verb this hub lacks, an unknown argument, an integer
// where the verb takes text): its call is checked with a value of each
// parameter's type in place.
func (c *Commands) typeCheck(cmd config.Command) error {
	if _, ok := c.reg.Lookup(cmd.Run.Verb); !ok || c.reg.IsAlias(cmd.Run.Verb) {
		return fmt.Errorf("%s is not a verb of this hub (see hub verbs)", cmd.Run.Verb)
	}
	sample := map[string]any{}
	for _, n := range cmd.Params.Names {
		sample[n] = cmd.Params.ByName[n].Sample()
	}
	args, err := cmd.Fill(sample)
	if err == nil {
		err = c.reg.CheckArguments(cmd.Run.Verb, args)
	}
	if err != nil {
		return fmt.Errorf("%s does not take these arguments: %w", cmd.Run.Verb, err)
	}
	return nil
}

// MetaCall is the mirror meta key of the call a named command stood
// for, as it ran: {"verb":…,"arguments":…}.
const MetaCall = "call"

// callText is env as the JSON envelope {"verb":…,"arguments":…}.
func callText(env executor.Envelope) string {
	b, _ := json.Marshal(struct {
		Verb      string          `json:"verb"`
		Arguments json.RawMessage `json:"arguments"`
	}{env.Verb, env.Arguments})
	return string(b)
}

func commandSummary(name string, cmd config.Command) string {
	if d := strings.TrimSpace(cmd.Description); d != "" {
		return d
	}
	return "Run the command " + name
}

// commandFields are the schema fields of a command's parameters.
func commandFields(cmd config.Command) []executor.Field {
	fields := make([]executor.Field, 0, len(cmd.Params.Names))
	for _, n := range cmd.Params.Names {
		p := cmd.Params.ByName[n]
		f := executor.Field{Name: n, Type: "string", Kind: executor.KindString, Required: true, Description: strings.TrimSpace(p.Description + " (" + p.Accepted() + ")")}
		switch p.Type {
		case config.ParamEnum:
			q := make([]string, len(p.Values))
			for i, v := range p.Values {
				q[i] = strconv.Quote(v)
			}
			f.Type, f.Kind, f.Enum = strings.Join(q, " | "), executor.KindEnum, append([]string(nil), p.Values...)
		case config.ParamInteger:
			f.Type, f.Kind = "long", executor.KindInt
		}
		fields = append(fields, f)
	}
	return fields
}

// commandTimeout is the bound of a command's call: its own timeout, or
// the verb timeout.
func commandTimeout(cmd config.Command, verbTimeout time.Duration) time.Duration {
	if cmd.Timeout > 0 {
		return cmd.Timeout.D()
	}
	return verbTimeout
}
