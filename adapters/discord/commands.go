package discord

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/bwmarrin/discordgo"
)

// Discord's limits on application commands.
const (
	maxCommands     = 100  // top-level chat commands per scope
	maxOptions      = 25   // subcommands or options of one command
	maxChoices      = 25   // choices of one option
	maxNameLen      = 32   // command, subcommand and option names
	maxDescLen      = 100  // descriptions
	maxCommandChars = 4000 // names, descriptions and choice values of one command, together
	minDescBudget   = 20   // descriptions are never cut shorter than this
)

// HubCommand is the top-level command of the hub's built-ins.
const HubCommand = "hub"

// route maps one invocable command path ("fs read-range", "hub help") back
// to what it runs.
type route struct {
	verb    string                    // canonical verb name; empty for a built-in
	builtin string                    // help, verbs, whoami, where, use, nodes or cancel
	fields  map[string]executor.Field // option name → argument field
	file    bool                      // the verb saves the attachment option's file
}

// commandSet is the derived slash commands and the way back from an
// invocation to a verb.
type commandSet struct {
	cmds   []*discordgo.ApplicationCommand
	wire   []wireCommand // cmds as bulk overwrite sends them
	routes map[string]*route
}

// Commands derives the slash commands from the registry's schemas: one
// top-level command per verb namespace (/fs, /proc, /sys), a kebab-case
// subcommand per verb (/fs read-range) whose options carry the argument
// types, required flags and descriptions within Discord's limits, and /hub
// for help, verbs and whoami. The order is deterministic (by name).
func Commands(reg *executor.Registry) ([]*discordgo.ApplicationCommand, error) {
	cs, err := buildCommands(reg)
	if err != nil {
		return nil, err
	}
	return cs.cmds, nil
}

// CommandsJSON is the indented JSON of Commands as bulk overwrite sends
// it, which is what `hub discord commands` prints.
func CommandsJSON(reg *executor.Registry) ([]byte, error) {
	cmds, err := Commands(reg)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(wireCommands(cmds)); err != nil {
		return nil, fmt.Errorf("encode discord commands: %w", err)
	}
	return b.Bytes(), nil
}

// wireCommand is the JSON of a command as registered: discordgo's own
// encoding writes null and false for every field a command does not use.
type wireCommand struct {
	Type        discordgo.ApplicationCommandType `json:"type"`
	Name        string                           `json:"name"`
	Description string                           `json:"description"`
	Options     []*wireOption                    `json:"options,omitempty"`
}

type wireOption struct {
	Type        discordgo.ApplicationCommandOptionType      `json:"type"`
	Name        string                                      `json:"name"`
	Description string                                      `json:"description"`
	Required    bool                                        `json:"required,omitempty"`
	Choices     []*discordgo.ApplicationCommandOptionChoice `json:"choices,omitempty"`
	Options     []*wireOption                               `json:"options,omitempty"`
}

func wireCommands(cmds []*discordgo.ApplicationCommand) []wireCommand {
	var opts func([]*discordgo.ApplicationCommandOption) []*wireOption
	opts = func(in []*discordgo.ApplicationCommandOption) []*wireOption {
		var out []*wireOption
		for _, o := range in {
			out = append(out, &wireOption{Type: o.Type, Name: o.Name, Description: o.Description, Required: o.Required, Choices: o.Choices, Options: opts(o.Options)})
		}
		return out
	}
	out := make([]wireCommand, len(cmds))
	for i, c := range cmds {
		out[i] = wireCommand{Type: c.Type, Name: c.Name, Description: c.Description, Options: opts(c.Options)}
	}
	return out
}

type verbEntry struct {
	sub    string // subcommand name; empty for a verb without namespace
	schema executor.VerbSchema
}

func buildCommands(reg *executor.Registry) (*commandSet, error) {
	if reg == nil {
		return nil, fmt.Errorf("discord commands: no registry")
	}
	cs := &commandSet{routes: map[string]*route{}}
	groups := map[string][]verbEntry{}
	for _, s := range reg.Schemas() {
		parts := strings.Split(s.Name, ".")
		top := kebab(parts[0])
		sub := ""
		if len(parts) > 1 {
			subParts := make([]string, len(parts)-1)
			for i, p := range parts[1:] {
				subParts[i] = kebab(p)
			}
			sub = strings.Join(subParts, "-")
		}
		if top == HubCommand {
			return nil, fmt.Errorf("discord commands: verb %s: the namespace %q is reserved for the hub's help, verbs and whoami", s.Name, HubCommand)
		}
		for _, n := range []string{top, sub} {
			if n != "" {
				if err := validName(n); err != nil {
					return nil, fmt.Errorf("discord commands: verb %s: %w", s.Name, err)
				}
			}
		}
		groups[top] = append(groups[top], verbEntry{sub: sub, schema: s})
	}
	tops := make([]string, 0, len(groups)+1)
	for t := range groups {
		tops = append(tops, t)
	}
	tops = append(tops, HubCommand)
	sort.Strings(tops)
	if len(tops) > maxCommands {
		return nil, fmt.Errorf("discord commands: %d top-level commands exceed Discord's limit of %d", len(tops), maxCommands)
	}
	for _, top := range tops {
		var cmd *discordgo.ApplicationCommand
		var err error
		for budget := maxDescLen; ; budget -= 10 {
			if top == HubCommand {
				cmd = hubCommand(reg, budget)
			} else {
				cmd, err = namespaceCommand(top, groups[top], budget, cs.routes)
				if err != nil {
					return nil, err
				}
			}
			if n := commandChars(cmd); n <= maxCommandChars {
				break
			} else if budget-10 < minDescBudget {
				return nil, fmt.Errorf("discord commands: /%s needs %d characters of names and descriptions, over Discord's limit of %d even with descriptions cut to %d characters", top, n, maxCommandChars, budget)
			}
		}
		cs.cmds = append(cs.cmds, cmd)
	}
	cs.wire = wireCommands(cs.cmds)
	cs.routes[HubCommand+" help"] = &route{builtin: "help"}
	cs.routes[HubCommand+" verbs"] = &route{builtin: "verbs"}
	cs.routes[HubCommand+" whoami"] = &route{builtin: "whoami"}
	cs.routes[HubCommand+" where"] = &route{builtin: "where"}
	cs.routes[HubCommand+" use"] = &route{builtin: "use"}
	cs.routes[HubCommand+" nodes"] = &route{builtin: "nodes"}
	cs.routes[HubCommand+" cancel"] = &route{builtin: "cancel"}
	return cs, nil
}

// namespaceCommand builds /<top>: subcommands per verb, or, for a verb
// without a namespace, the verb's options directly.
func namespaceCommand(top string, verbs []verbEntry, budget int, routes map[string]*route) (*discordgo.ApplicationCommand, error) {
	sort.Slice(verbs, func(i, j int) bool { return verbs[i].sub < verbs[j].sub })
	cmd := &discordgo.ApplicationCommand{Type: discordgo.ChatApplicationCommand, Name: top}
	if len(verbs) == 1 && verbs[0].sub == "" {
		opts, fields, err := verbOptions(verbs[0].schema, budget)
		if err != nil {
			return nil, err
		}
		cmd.Description = describe(verbs[0].schema.Summary, verbs[0].schema.Name, budget)
		cmd.Options = opts
		routes[top] = &route{verb: verbs[0].schema.Name, fields: fields, file: verbs[0].schema.TakesFile}
		return cmd, nil
	}
	if len(verbs) > maxOptions {
		return nil, fmt.Errorf("discord commands: /%s would have %d subcommands, over Discord's limit of %d", top, len(verbs), maxOptions)
	}
	names := make([]string, 0, len(verbs))
	for i, v := range verbs {
		if v.sub == "" {
			return nil, fmt.Errorf("discord commands: verb %s has the same name as the namespace of %s", v.schema.Name, verbs[(i+1)%len(verbs)].schema.Name)
		}
		if i > 0 && verbs[i-1].sub == v.sub {
			return nil, fmt.Errorf("discord commands: verbs %s and %s both map to /%s %s", verbs[i-1].schema.Name, v.schema.Name, top, v.sub)
		}
		opts, fields, err := verbOptions(v.schema, budget)
		if err != nil {
			return nil, err
		}
		cmd.Options = append(cmd.Options, &discordgo.ApplicationCommandOption{
			Type:        discordgo.ApplicationCommandOptionSubCommand,
			Name:        v.sub,
			Description: describe(v.schema.Summary, v.schema.Name, budget),
			Options:     opts,
		})
		routes[top+" "+v.sub] = &route{verb: v.schema.Name, fields: fields, file: v.schema.TakesFile}
		names = append(names, v.sub)
	}
	cmd.Description = truncate(top+".* verbs: "+strings.Join(names, ", "), maxDescLen)
	return cmd, nil
}

// verbOptions turns a verb's argument fields into options, required ones
// first (Discord's rule), each group in schema order.
func verbOptions(s executor.VerbSchema, budget int) ([]*discordgo.ApplicationCommandOption, map[string]executor.Field, error) {
	fields := map[string]executor.Field{}
	var req, opt []*discordgo.ApplicationCommandOption
	for _, f := range s.Arguments.Fields {
		name := kebab(f.Name)
		if err := validName(name); err != nil {
			return nil, nil, fmt.Errorf("discord commands: verb %s, argument %s: %w", s.Name, f.Name, err)
		}
		if _, dup := fields[name]; dup {
			return nil, nil, fmt.Errorf("discord commands: verb %s: two arguments map to the option %q", s.Name, name)
		}
		fields[name] = f
		o := fieldOption(name, f, budget)
		if o.Required {
			req = append(req, o)
		} else {
			opt = append(opt, o)
		}
	}
	if s.TakesFile {
		// The file to save: an attachment option, required, first.
		if _, dup := fields[fileOption]; dup {
			return nil, nil, fmt.Errorf("discord commands: verb %s: an argument maps to the option %q, the file it saves", s.Name, fileOption)
		}
		req = append([]*discordgo.ApplicationCommandOption{{
			Type: discordgo.ApplicationCommandOptionAttachment, Name: fileOption, Required: true,
			Description: describe("The file to save in the workspace", fileOption, budget),
		}}, req...)
	}
	all := append(req, opt...)
	if len(all) > maxOptions {
		return nil, nil, fmt.Errorf("discord commands: verb %s has %d arguments, over Discord's limit of %d options", s.Name, len(all), maxOptions)
	}
	return all, fields, nil
}

// fieldOption maps one argument field to an option. Lists are strings split
// shell-style and never required (an absent list is an empty list, as in
// the chat grammar), lists of objects YAML or JSON text; maps and objects
// are YAML or JSON text.
func fieldOption(name string, f executor.Field, budget int) *discordgo.ApplicationCommandOption {
	o := &discordgo.ApplicationCommandOption{Name: name, Required: f.Required}
	var suffix string
	switch f.Kind {
	case executor.KindInt:
		o.Type = discordgo.ApplicationCommandOptionInteger
	case executor.KindNumber:
		o.Type = discordgo.ApplicationCommandOptionNumber
	case executor.KindBool:
		o.Type = discordgo.ApplicationCommandOptionBoolean
	case executor.KindEnum:
		o.Type = discordgo.ApplicationCommandOptionString
		if len(f.Enum) <= maxChoices {
			for _, v := range f.Enum {
				o.Choices = append(o.Choices, &discordgo.ApplicationCommandOptionChoice{Name: truncate(v, maxDescLen), Value: v})
			}
		} else {
			suffix = " (one of: " + strings.Join(f.Enum, ", ") + ")"
		}
	case executor.KindList:
		o.Type = discordgo.ApplicationCommandOptionString
		o.Required = false
		suffix = " (words split like a shell: quote to group)"
		if structuredElem(f) {
			suffix = " (a YAML or JSON list)"
		}
	case executor.KindMap, executor.KindObject, executor.KindAny:
		o.Type = discordgo.ApplicationCommandOptionString
		suffix = " (YAML or JSON)"
	default:
		o.Type = discordgo.ApplicationCommandOptionString
	}
	if d := f.Default; d != "" && d != "null" && !f.Required && f.Kind != executor.KindList {
		suffix += " (default " + d + ")"
	}
	o.Description = describeWith(f.Description, f.Type, suffix, budget)
	return o
}

// structuredElem reports whether f is a list of objects, maps or values of
// any kind, which no shell-style word list can spell.
func structuredElem(f executor.Field) bool {
	return f.Kind == executor.KindList && (f.Elem == executor.KindObject || f.Elem == executor.KindMap || f.Elem == executor.KindAny)
}

// hubCommand is /hub help [verb] | verbs | whoami | where | use [workspace]
// | nodes | cancel [turn].
func hubCommand(reg *executor.Registry, budget int) *discordgo.ApplicationCommand {
	verb := &discordgo.ApplicationCommandOption{
		Type:        discordgo.ApplicationCommandOptionString,
		Name:        "verb",
		Description: describe("The verb to show the usage and schema of", "verb", budget),
	}
	if infos := reg.Verbs(); len(infos) <= maxChoices {
		for _, v := range infos {
			verb.Choices = append(verb.Choices, &discordgo.ApplicationCommandOptionChoice{Name: v.Name, Value: v.Name})
		}
	}
	sub := func(name, desc string, opts ...*discordgo.ApplicationCommandOption) *discordgo.ApplicationCommandOption {
		return &discordgo.ApplicationCommandOption{Type: discordgo.ApplicationCommandOptionSubCommand, Name: name, Description: describe(desc, name, budget), Options: opts}
	}
	return &discordgo.ApplicationCommand{
		Type:        discordgo.ChatApplicationCommand,
		Name:        HubCommand,
		Description: "Hub commands: help, verbs, whoami, where, use, nodes, cancel",
		Options: []*discordgo.ApplicationCommandOption{
			sub("help", "How to use the hub, or one verb's usage and schema", verb),
			sub("verbs", "List the verbs you may run", nil...),
			sub("whoami", "Show your identity and roles", nil...),
			sub("where", "Show the workspace you work in and its destination", nil...),
			sub("use", "List workspaces, or choose one for this channel (--default drops the choice)", &discordgo.ApplicationCommandOption{
				Type:        discordgo.ApplicationCommandOptionString,
				Name:        "workspace",
				Description: describe("The workspace to work in, or --default to let the configuration decide", "workspace", budget),
			}),
			sub("nodes", "List the remote nodes: online or offline, version, load (needs admin.read)", nil...),
			sub("cancel", "Stop your running command in this channel (anyone's with admin.cancel)", &discordgo.ApplicationCommandOption{
				Type:        discordgo.ApplicationCommandOptionString,
				Name:        "turn",
				Description: describe("The turn id of the call to stop; default: every call of yours in this channel", "turn", budget),
			}),
		},
	}
}

// commandChars counts what Discord counts against maxCommandChars: names,
// descriptions and choice names and values, at every level.
func commandChars(c *discordgo.ApplicationCommand) int {
	n := utf8.RuneCountInString(c.Name) + utf8.RuneCountInString(c.Description)
	var walk func(opts []*discordgo.ApplicationCommandOption)
	walk = func(opts []*discordgo.ApplicationCommandOption) {
		for _, o := range opts {
			n += utf8.RuneCountInString(o.Name) + utf8.RuneCountInString(o.Description)
			for _, ch := range o.Choices {
				n += utf8.RuneCountInString(ch.Name) + utf8.RuneCountInString(fmt.Sprint(ch.Value))
			}
			walk(o.Options)
		}
	}
	walk(c.Options)
	return n
}

// kebab turns a camelCase name into Discord's kebab-case: readRange →
// read-range, startLine → start-line, readURLs → read-urls.
func kebab(s string) string {
	rs := []rune(s)
	var b strings.Builder
	for i, r := range rs {
		if unicode.IsUpper(r) && i > 0 {
			prev := rs[i-1]
			nextLower := i+1 < len(rs) && unicode.IsLower(rs[i+1])
			if unicode.IsLower(prev) || unicode.IsDigit(prev) || (unicode.IsUpper(prev) && nextLower) {
				b.WriteByte('-')
			}
		}
		if r == '_' || r == '.' || r == ' ' {
			b.WriteByte('-')
			continue
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// validName checks a command or option name against Discord's rules, as
// far as kebab's output can break them.
func validName(n string) error {
	if n == "" || utf8.RuneCountInString(n) > maxNameLen {
		return fmt.Errorf("name %q must be 1 to %d characters", n, maxNameLen)
	}
	for _, r := range n {
		if !(r == '-' || r == '_' || unicode.IsLower(r) || unicode.IsDigit(r) || (unicode.IsLetter(r) && !unicode.IsUpper(r))) {
			return fmt.Errorf("name %q: character %q is not allowed (accepted: lower-case letters, digits, - and _)", n, r)
		}
	}
	return nil
}

// describe is a description of at most budget characters, never empty.
func describe(desc, fallback string, budget int) string {
	return describeWith(desc, fallback, "", budget)
}

// describeWith appends suffix to desc, cutting desc (not the suffix) to fit
// budget characters.
func describeWith(desc, fallback, suffix string, budget int) string {
	desc = strings.TrimSpace(strings.Join(strings.Fields(desc), " "))
	if desc == "" {
		desc = fallback
	}
	budget = min(budget, maxDescLen)
	room := budget - utf8.RuneCountInString(suffix)
	if room < minDescBudget/2 {
		return truncate(desc+suffix, budget)
	}
	return truncate(desc, room) + suffix
}

// truncate cuts s to at most n characters, at a word boundary when one is
// near, marking the cut with an ellipsis.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	rs := []rune(s)
	cut := n - 1
	if i := strings.LastIndexFunc(string(rs[:cut]), unicode.IsSpace); i > 0 && utf8.RuneCountInString(string(rs[:cut])[:i]) >= cut*2/3 {
		cut = utf8.RuneCountInString(string(rs[:cut])[:i])
	}
	return strings.TrimRightFunc(string(rs[:cut]), func(r rune) bool { return unicode.IsSpace(r) || r == ',' || r == ';' || r == ':' }) + "…"
}
