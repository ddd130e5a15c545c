package discord

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/bwmarrin/discordgo"
)

// invocation is a slash command turned into the hub's chat grammar.
type invocation struct {
	// Text is what the hub parses: "/help", "/whoami", or a JSON envelope
	// {"verb": …, "arguments": {…}}.
	Text string
	// Display is the command as the user typed it, for the mirror:
	// "/fs read-range path:README.md start-line:1 end-line:5".
	Display string
	// Upload is the file of the attachment option of a verb that saves
	// one (files.go); nil otherwise.
	Upload *chat.Upload
}

// invocation builds the hub text of an application command interaction.
// Errors say what was wrong with the command, for the user.
func (cs *commandSet) invocation(data discordgo.ApplicationCommandInteractionData) (invocation, error) {
	key := data.Name
	display := "/" + data.Name
	opts := data.Options
	// Descend through a subcommand group and a subcommand.
	for len(opts) == 1 && (opts[0].Type == discordgo.ApplicationCommandOptionSubCommandGroup || opts[0].Type == discordgo.ApplicationCommandOptionSubCommand) {
		key += " " + opts[0].Name
		display += " " + opts[0].Name
		opts = opts[0].Options
	}
	r, ok := cs.routes[key]
	if !ok {
		return invocation{}, fmt.Errorf("unknown command /%s: the hub's commands have changed since they were registered; they are registered again when the hub restarts", key)
	}
	for _, o := range opts {
		display += fmt.Sprintf(" %s:%v", o.Name, o.Value)
	}
	if r.builtin != "" {
		text := "/" + r.builtin
		if r.builtin == "help" || r.builtin == "use" || r.builtin == "cancel" {
			for _, o := range opts {
				if s, ok := o.Value.(string); ok && (o.Name == "verb" || o.Name == "workspace" || o.Name == "turn") && strings.TrimSpace(s) != "" {
					text += " " + strings.Join(strings.Fields(s), "")
				}
			}
		}
		return invocation{Text: text, Display: display}, nil
	}
	args := map[string]any{}
	var upload *chat.Upload
	for _, o := range opts {
		if r.file && o.Name == fileOption && o.Type == discordgo.ApplicationCommandOptionAttachment {
			var err error
			if upload, err = resolvedUpload(data, o); err != nil {
				return invocation{}, fmt.Errorf("/%s option %s: %w", key, o.Name, err)
			}
			continue
		}
		f, ok := r.fields[o.Name]
		if !ok {
			return invocation{}, fmt.Errorf("/%s has no option %q: the hub's commands have changed since they were registered; they are registered again when the hub restarts", key, o.Name)
		}
		v, err := optionValue(f, o)
		if err != nil {
			return invocation{}, fmt.Errorf("/%s option %s: %w", key, o.Name, err)
		}
		args[f.Name] = v
	}
	// A list is never required on Discord: absent means empty, as in chat.
	for _, f := range r.fields {
		if _, ok := args[f.Name]; !ok && f.Kind == executor.KindList {
			args[f.Name] = []any{}
		}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(struct {
		Verb      string         `json:"verb"`
		Arguments map[string]any `json:"arguments"`
	}{r.verb, args}); err != nil {
		return invocation{}, fmt.Errorf("/%s: %w", key, err)
	}
	if r.file && upload == nil {
		return invocation{}, fmt.Errorf("/%s needs its %s option: the file to save", key, fileOption)
	}
	return invocation{Text: strings.TrimRight(b.String(), "\n"), Display: display, Upload: upload}, nil
}

// resolvedUpload is the attachment an attachment option names, from the
// interaction's resolved data.
func resolvedUpload(data discordgo.ApplicationCommandInteractionData, o *discordgo.ApplicationCommandInteractionDataOption) (*chat.Upload, error) {
	id, _ := o.Value.(string)
	if data.Resolved == nil || data.Resolved.Attachments[id] == nil {
		return nil, fmt.Errorf("attachment %q is not in the interaction's resolved data", id)
	}
	return attachmentUpload(data.Resolved.Attachments[id]), nil
}

// optionValue types one option's value for its argument field.
func optionValue(f executor.Field, o *discordgo.ApplicationCommandInteractionDataOption) (any, error) {
	switch f.Kind {
	case executor.KindInt:
		n, ok := o.Value.(float64)
		if !ok || n != math.Trunc(n) || math.IsInf(n, 0) {
			return nil, fmt.Errorf("expected an integer, got %v", o.Value)
		}
		return int64(n), nil
	case executor.KindNumber:
		n, ok := o.Value.(float64)
		if !ok {
			return nil, fmt.Errorf("expected a number, got %v", o.Value)
		}
		return n, nil
	case executor.KindBool:
		v, ok := o.Value.(bool)
		if !ok {
			return nil, fmt.Errorf("expected true or false, got %v", o.Value)
		}
		return v, nil
	}
	s, ok := o.Value.(string)
	if !ok {
		return nil, fmt.Errorf("expected text, got %v", o.Value)
	}
	switch {
	case structuredElem(f):
		return yamlList(s)
	case f.Kind == executor.KindList:
		words, err := executor.SplitWords(s)
		if err != nil {
			return nil, err
		}
		out := make([]any, len(words))
		for i, w := range words {
			v, err := executor.TypeWord(f.Elem, w)
			if err != nil {
				return nil, fmt.Errorf("word %d: %w", i+1, err)
			}
			out[i] = v
		}
		return out, nil
	case f.Kind == executor.KindMap || f.Kind == executor.KindObject || f.Kind == executor.KindAny:
		j, err := executor.YAMLToJSON([]byte(s), executor.Limits{})
		if err != nil {
			return nil, fmt.Errorf("not YAML or JSON: %v", err)
		}
		return json.RawMessage(j), nil
	}
	return s, nil
}

// yamlList reads a list of objects from YAML or JSON text; one object
// alone is a list of one.
func yamlList(s string) (any, error) {
	j, err := executor.YAMLToJSON([]byte(s), executor.Limits{})
	if err != nil {
		return nil, fmt.Errorf("not YAML or JSON: %v", err)
	}
	switch t := bytes.TrimSpace(j); {
	case len(t) > 0 && t[0] == '[':
		return json.RawMessage(t), nil
	case len(t) > 0 && t[0] == '{':
		return json.RawMessage(append(append([]byte{'['}, t...), ']')), nil
	}
	return nil, fmt.Errorf("expected a list like [{key: value}, …], got %s", s)
}
