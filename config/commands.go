package config

import (
	"encoding/json"
	"fmt"
	"math"
	"path"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// Commands is the commands section: named commands, each a verb
// cmd.<name> with typed parameters that stands for one fixed verb call
// (docs/chatops.md).
type Commands map[string]Command

// Command is one named command, under commands: NAME.
type Command struct {
	// Description is the line menus, /help and tool lists show.
	Description string `yaml:"description"`
	// Params are its parameters, in the order chat fills them by position.
	Params CommandParams `yaml:"params"`
	// Workspace is the workspace it runs in ("" lets the workspace rules
	// decide, as for any call).
	Workspace string `yaml:"workspace"`
	// Timeout bounds its call (0: verbs.verb_timeout).
	Timeout Duration `yaml:"timeout"`
	// Run is the call it stands for: a verb and its arguments, where a
	// string value that is exactly "{param}" is replaced by the value of
	// that parameter.
	Run CommandRun `yaml:"run"`
}

// CommandRun is the verb call of a named command.
type CommandRun struct {
	Verb      string    `yaml:"verb"`
	Arguments Arguments `yaml:"arguments"`
}

// CommandParam is one typed parameter of a named command.
type CommandParam struct {
	// Type is string, enum, integer or path.
	Type        string `yaml:"type"`
	Description string `yaml:"description"`
	// Pattern is the RE2 expression a string must match whole (required
	// for type string).
	Pattern string `yaml:"pattern"`
	// Values are the values of an enum.
	Values []string `yaml:"values"`
	// Min and Max bound an integer (both included).
	Min *int64 `yaml:"min"`
	Max *int64 `yaml:"max"`
}

// The parameter types of a named command.
const (
	ParamString  = "string"
	ParamEnum    = "enum"
	ParamInteger = "integer"
	ParamPath    = "path"
)

// CommandParams are a command's parameters in the order they were
// written (chat fills them by position in that order).
type CommandParams struct {
	Names  []string
	ByName map[string]CommandParam
}

// CommandPrefix starts the verb name of every named command: the command
// deploy is the verb cmd.deploy, and its permission.
const CommandPrefix = "cmd."

// maxParamBytes bounds a string or path parameter's value.
const maxParamBytes = 1024

// placeholder finds what looks like a placeholder in a string value.
var placeholder = regexp.MustCompile(`\{[A-Za-z_][A-Za-z0-9_]*\}`)

// ValidCommandName checks a command's name: its verb is cmd.<name>, and
// chat menus show it as cmd_<name>, so it is 1 to 32 lower-case letters
// and digits, starting with a letter.
func ValidCommandName(name string) error {
	ok := name != "" && len(name) <= 32
	for i := 0; i < len(name) && ok; i++ {
		c := name[i]
		ok = c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9'
	}
	if !ok {
		return fmt.Errorf("%q is not a command name (accepted: 1 to 32 lower-case letters and digits, starting with a letter)", name)
	}
	return nil
}

// checkYAML checks a mapping of parameter names to parameters.
func (p *CommandParams) checkYAML(d *decoder, n *yaml.Node, key string) {
	if !d.isMapping(n, key, "each parameter's name with its type below it, such as env: {type: enum, values: [staging, production]}") {
		return
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if d.twice(k, key, seen) {
			continue
		}
		d.walk(v, reflect.TypeFor[CommandParam](), d.record(key, k))
	}
}

// UnmarshalYAML decodes the parameters, keeping their order.
func (p *CommandParams) UnmarshalYAML(n *yaml.Node) error {
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: params must be a mapping of parameter names", n.Line)
	}
	p.ByName = map[string]CommandParam{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		var cp CommandParam
		if err := n.Content[i+1].Decode(&cp); err != nil {
			return err
		}
		p.Names = append(p.Names, n.Content[i].Value)
		p.ByName[n.Content[i].Value] = cp
	}
	return nil
}

// applyDefaults has nothing to fill: every key of a command is its own.
func (s *Commands) applyDefaults(*Config) {}

// validate checks every command: its name, its parameters, its call with
// its placeholders, its workspace.
func (s *Commands) validate(c *Config, v *validator) {
	for _, name := range sortedKeys(*s) {
		key, cmd := "commands."+name, (*s)[name]
		if err := ValidCommandName(name); err != nil {
			v.badAt(key, "commands", ": %v", err)
		}
		for _, pn := range cmd.Params.Names {
			if err := cmd.Params.ByName[pn].check(); err != nil {
				v.bad(key+".params."+pn, ": %v", err)
			}
		}
		if strings.TrimSpace(cmd.Run.Verb) == "" {
			v.bad(key+".run.verb", " is empty (accepted: the verb the command runs, such as proc.run, with its arguments: below)")
		} else if strings.HasPrefix(strings.ToLower(cmd.Run.Verb), CommandPrefix) {
			v.bad(key+".run.verb", ": %s is a named command (accepted: a verb such as proc.run or fs.deleteFile; a command does not run another command)", cmd.Run.Verb)
		}
		if err := cmd.checkPlaceholders(); err != nil {
			v.bad(key+".run.arguments", ": %v", err)
		}
		if cmd.Timeout < 0 {
			v.bad(key+".timeout", ": %s is negative (accepted: a duration such as 30s or 5m, or 0 for verbs.verb_timeout)", cmd.Timeout)
		}
		if cmd.Workspace != "" {
			if _, ok := c.WorkspaceByName(cmd.Workspace); !ok {
				v.bad(key+".workspace", ": workspace %q is not configured (accepted: %s)", cmd.Workspace, strings.Join(c.WorkspaceNames(), ", "))
			}
		}
	}
}

// check checks a parameter's definition.
func (p CommandParam) check() error {
	switch p.Type {
	case ParamString:
		if p.Pattern == "" {
			return fmt.Errorf("a string parameter needs a pattern (accepted: an RE2 expression the whole value must match, such as '[a-z0-9-]{1,40}'), or use type enum or path")
		}
		if _, err := regexp.Compile(anchored(p.Pattern)); err != nil {
			return fmt.Errorf("pattern %q is not an RE2 expression: %v", p.Pattern, err)
		}
	case ParamEnum:
		if len(p.Values) == 0 {
			return fmt.Errorf("an enum parameter needs values (accepted: a list such as [staging, production])")
		}
		for i, val := range p.Values {
			if err := checkText(val); err != nil || val == "" || slices.Contains(p.Values[:i], val) {
				return fmt.Errorf("value %q is empty, repeated or not plain text (accepted: distinct printable values)", val)
			}
		}
	case ParamInteger:
		if p.Min != nil && p.Max != nil && *p.Min > *p.Max {
			return fmt.Errorf("min %d is above max %d", *p.Min, *p.Max)
		}
	case ParamPath:
	default:
		return fmt.Errorf("type %q is not a parameter type (accepted: string, enum, integer, path)", p.Type)
	}
	if p.Type != ParamString && p.Pattern != "" || p.Type != ParamEnum && p.Values != nil || p.Type != ParamInteger && (p.Min != nil || p.Max != nil) {
		return fmt.Errorf("pattern is for type string, values for enum, min and max for integer")
	}
	return nil
}

func anchored(pattern string) string { return `^(?:` + pattern + `)$` }

// checkPlaceholders checks the command's call: a placeholder is a whole
// string value ("{env}"), never part of a longer string nor a key, and
// names a parameter; every parameter is used.
func (cmd Command) checkPlaceholders() error {
	if _, err := cmd.Run.Arguments.JSON(); err != nil {
		return err
	}
	used := map[string]bool{}
	var err error
	walkStrings(map[string]any(cmd.Run.Arguments), "", func(at, s string, isKey bool) {
		if err != nil || !placeholder.MatchString(s) {
			return
		}
		name := strings.TrimSuffix(strings.TrimPrefix(s, "{"), "}")
		_, known := cmd.Params.ByName[name]
		switch {
		case isKey:
			err = fmt.Errorf("%s: a placeholder may not be a key (accepted: \"{param}\" as a whole value)", at)
		case placeholder.FindString(s) != s:
			err = fmt.Errorf("%s: %q has a placeholder inside a longer string; a parameter is substituted only as a whole value (accepted: \"{param}\" alone, as a value or a list element)", at, s)
		case !known:
			err = fmt.Errorf("%s: %q names no parameter (accepted: %s)", at, s, strings.Join(cmd.Params.Names, ", "))
		default:
			used[name] = true
		}
	})
	if err != nil {
		return err
	}
	for _, n := range cmd.Params.Names {
		if !used[n] {
			return fmt.Errorf("parameter %s is not used: write \"{%s}\" as the value it fills", n, n)
		}
	}
	return nil
}

// walkStrings calls f for every string of v, keys too, with where it is.
func walkStrings(v any, at string, f func(at, s string, isKey bool)) {
	switch x := v.(type) {
	case string:
		f(at, x, false)
	case Arguments: // a mapping nested in arguments decodes as their type
		walkStrings(map[string]any(x), at, f)
	case map[string]any:
		for _, k := range sortedKeys(x) {
			kat := strings.TrimPrefix(at+"."+k, ".")
			f(kat, k, true)
			walkStrings(x[k], kat, f)
		}
	case []any:
		for i, e := range x {
			walkStrings(e, fmt.Sprintf("%s[%d]", at, i), f)
		}
	}
}

// Call is the verb call the command stands for with params (a JSON
// object of parameter values, as a verb's arguments arrive) in place:
// each value checked by its parameter's type, then put where its
// placeholder stands. A value is never read for placeholders, never
// joined to other text, never given to a shell.
func (cmd Command) Call(params json.RawMessage) (verb string, arguments json.RawMessage, err error) {
	vals, err := cmd.Values(params)
	if err != nil {
		return "", nil, err
	}
	args, err := cmd.Fill(vals)
	return cmd.Run.Verb, args, err
}

// Fill is the command's arguments with vals put where their placeholders
// stand, unchecked (Call checks them first).
func (cmd Command) Fill(vals map[string]any) (json.RawMessage, error) {
	args, err := cmd.Run.Arguments.JSON()
	if err != nil {
		return nil, err
	}
	var tree any
	if err := json.Unmarshal(args, &tree); err != nil {
		return nil, err
	}
	return json.Marshal(substitute(tree, vals))
}

// substitute replaces every string that is exactly a placeholder of vals.
func substitute(v any, vals map[string]any) any {
	switch x := v.(type) {
	case string:
		if placeholder.FindString(x) == x {
			if val, ok := vals[x[1:len(x)-1]]; ok {
				return val
			}
		}
	case map[string]any:
		for k, e := range x {
			x[k] = substitute(e, vals)
		}
	case []any:
		for i, e := range x {
			x[i] = substitute(e, vals)
		}
	}
	return v
}

// Values checks params, a JSON object of the command's parameters:
// exactly its parameters, each of its type and within its bounds. Strings
// and paths come back as strings, integers as int64.
func (cmd Command) Values(params json.RawMessage) (map[string]any, error) {
	var raw map[string]json.RawMessage
	if len(params) == 0 || string(params) == "null" {
		params = json.RawMessage("{}")
	}
	if err := json.Unmarshal(params, &raw); err != nil {
		return nil, fmt.Errorf("the parameters must be an object of %s", cmd.paramList())
	}
	for k := range raw {
		if _, ok := cmd.Params.ByName[k]; !ok {
			return nil, fmt.Errorf("unknown parameter %q (accepted: %s)", k, cmd.paramList())
		}
	}
	vals := make(map[string]any, len(raw))
	for _, n := range cmd.Params.Names {
		r, ok := raw[n]
		if !ok || string(r) == "null" {
			return nil, fmt.Errorf("missing parameter %q (%s)", n, cmd.Params.ByName[n].Accepted())
		}
		v, err := cmd.Params.ByName[n].Value(r)
		if err != nil {
			return nil, fmt.Errorf("parameter %q: %w", n, err)
		}
		vals[n] = v
	}
	return vals, nil
}

func (cmd Command) paramList() string {
	if len(cmd.Params.Names) == 0 {
		return "no parameters"
	}
	return strings.Join(cmd.Params.Names, ", ")
}

// Value checks one value (JSON) of the parameter and returns it typed.
func (p CommandParam) Value(raw json.RawMessage) (any, error) {
	if p.Type == ParamInteger {
		return p.integer(raw)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("%s is not text (accepted: %s)", raw, p.Accepted())
	}
	if err := checkText(s); err != nil {
		return nil, fmt.Errorf("%w (accepted: %s)", err, p.Accepted())
	}
	switch p.Type {
	case ParamEnum:
		if !slices.Contains(p.Values, s) {
			return nil, fmt.Errorf("%q is not one of its values (accepted: %s)", s, p.Accepted())
		}
	case ParamString:
		if !regexp.MustCompile(anchored(p.Pattern)).MatchString(s) {
			return nil, fmt.Errorf("%q does not match its pattern (accepted: %s)", s, p.Accepted())
		}
	case ParamPath:
		if err := checkLocalPath(s); err != nil {
			return nil, fmt.Errorf("%w (accepted: %s)", err, p.Accepted())
		}
	}
	return s, nil
}

// integer reads a JSON integer within the parameter's bounds.
func (p CommandParam) integer(raw json.RawMessage) (int64, error) {
	s := strings.TrimSpace(string(raw))
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s is not an integer between %d and %d (accepted: %s)", s, p.lo(), p.hi(), p.Accepted())
	}
	if n < p.lo() || n > p.hi() {
		return 0, fmt.Errorf("%d is out of range (accepted: %s)", n, p.Accepted())
	}
	return n, nil
}

func (p CommandParam) lo() int64 {
	if p.Min != nil {
		return *p.Min
	}
	return math.MinInt64
}

func (p CommandParam) hi() int64 {
	if p.Max != nil {
		return *p.Max
	}
	return math.MaxInt64
}

// Sample is a value of the parameter's JSON type, for checking where
// its placeholder stands (not necessarily one it accepts).
func (p CommandParam) Sample() any {
	switch p.Type {
	case ParamInteger:
		return min(max(0, p.lo()), p.hi())
	case ParamEnum:
		return p.Values[0]
	}
	return "x"
}

// Accepted says what the parameter accepts, for errors and help.
func (p CommandParam) Accepted() string {
	switch p.Type {
	case ParamEnum:
		return "one of " + strings.Join(p.Values, ", ")
	case ParamString:
		return "text matching " + p.Pattern
	case ParamInteger:
		return fmt.Sprintf("an integer from %d to %d", p.lo(), p.hi())
	}
	return "a relative path inside the workspace, without .. and not starting with -"
}

// checkText refuses what a value of a parameter never holds: invalid
// UTF-8, control characters (newlines, NUL) and format characters (bidi
// overrides, zero-width characters), and more than 1024 bytes.
func checkText(s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("is not valid UTF-8")
	}
	if len(s) > maxParamBytes {
		return fmt.Errorf("is longer than %d bytes", maxParamBytes)
	}
	for _, r := range s {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return fmt.Errorf("holds the character %U, a control or format character", r)
		}
	}
	return nil
}

// checkLocalPath accepts a path relative to the workspace that stays in
// it as written: not empty, not absolute, no backslash, no ".." element,
// not starting with '-' (a program could read it as an option). The verb
// it is given to confines it again when it opens it (symbolic links
// included).
func checkLocalPath(s string) error {
	switch {
	case s == "":
		return fmt.Errorf("is empty")
	case strings.HasPrefix(s, "-"):
		return fmt.Errorf("%q starts with '-', which a program may read as an option; write ./%s", s, s)
	case path.IsAbs(s) || strings.ContainsRune(s, '\\') || len(s) > 1 && s[1] == ':':
		return fmt.Errorf("%q is not a relative path with forward slashes", s)
	}
	for _, el := range strings.Split(s, "/") {
		if el == ".." {
			return fmt.Errorf("%q leaves the workspace (..)", s)
		}
	}
	return nil
}
