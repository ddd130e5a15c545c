package executor

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Builtins are the commands every surface understands, besides verbs.
var Builtins = []string{"help", "verbs", "whoami", "start", "use", "where", "nodes", "cancel"}

// Command is a chat message parsed by ParseCommand.
type Command struct {
	// Builtin is "help", "verbs", "whoami", "start", "use", "where",
	// "nodes" or "cancel" for a built-in command; BuiltinArg is its argument (the verb
	// for /help VERB, the workspace for /use NAME, the turn for /cancel TURN).
	Builtin    string
	BuiltinArg string
	// Verb is the canonical verb name and Arguments its JSON object.
	Verb      string
	Arguments json.RawMessage
	// JSON is set by a trailing --json: reply with the raw result.
	JSON bool
	// Workspace is the workspace an envelope message names, if any.
	Workspace string
	// Mention is the bot name of /cmd@Name, without the @; adapters ignore
	// commands addressed to another bot.
	Mention string
}

// Envelope returns the verb call of a verb command.
func (c Command) Envelope() Envelope {
	return Envelope{Verb: c.Verb, Arguments: c.Arguments, Workspace: c.Workspace}
}

// ErrNotCommand is returned for text that is neither a /command nor an envelope.
var ErrNotCommand = errors.New("not a command: start with /<verb> (for example /fs.listDir .), /help, or send a {verb, arguments} envelope")

// ParseCommand parses chat text by the chat grammar (docs/grammar.md):
//
//	/fs.readFile README.md               positionals, in the order of the required fields
//	/fs.listDir docs                     (or the one argument of a verb with a single, optional one)
//	/fs_readfile path=README.md          key=value pairs, shell quoting
//	/proc.run git status --short         a trailing list field takes the rest
//	/fs.writeFile notes.txt              a YAML/JSON object on the following lines, or
//	hello                                the text itself for the one missing string field
//	{"verb": "fs.exists", …}             the whole message as an envelope
//
// A trailing unquoted --json asks for the raw result. Errors are *Error
// (unknown_verb or invalid_arguments) whose message shows the verb's usage and
// schema.
func (x *Executor) ParseCommand(text string) (Command, error) {
	trimmed := strings.TrimSpace(text)
	if trimmed == "" {
		return Command{}, ErrNotCommand
	}
	if !strings.HasPrefix(trimmed, "/") {
		if looksLikeEnvelope(trimmed) {
			return x.parseEnvelopeMessage(trimmed)
		}
		return Command{}, ErrNotCommand
	}
	head, body, _ := strings.Cut(trimmed, "\n")
	head = strings.TrimRight(head, " \t\r")
	name, rest, _ := strings.Cut(head, " ")
	name = name[1:]
	var cmd Command
	if at := strings.IndexByte(name, '@'); at >= 0 {
		cmd.Mention = name[at+1:]
		name = name[:at]
	}
	if name == "" {
		return cmd, ErrNotCommand
	}
	toks, err := tokenize(rest)
	if err != nil {
		return cmd, &Error{Code: CodeInvalidArguments, Message: fmt.Sprintf("Cannot parse /%s: %v", name, err)}
	}
	if n := len(toks); n > 0 && !toks[n-1].quoted && (toks[n-1].text == "--json" || toks[n-1].text == "—json") {
		cmd.JSON = true
		toks = toks[:n-1]
	}
	lname := strings.ToLower(name)
	for _, b := range Builtins {
		if lname == b || lname == "hub."+b || lname == "hub_"+b {
			cmd.Builtin = b
			if len(toks) > 0 {
				cmd.BuiltinArg = toks[0].text
			}
			return cmd, nil
		}
	}
	reg, ok := x.reg.lookup(name)
	if !ok {
		return cmd, x.reg.unknownVerb(name)
	}
	cmd.Verb = reg.info.Name
	args, err := x.bindArgs(reg, toks, body)
	if err != nil {
		return cmd, err
	}
	cmd.Arguments = args
	return cmd, nil
}

func looksLikeEnvelope(s string) bool {
	if strings.HasPrefix(s, "{") {
		return true
	}
	for _, line := range strings.Split(s, "\n") {
		l := strings.TrimSpace(line)
		if strings.HasPrefix(l, "verb:") || strings.HasPrefix(l, `"verb":`) {
			return !strings.HasPrefix(line, " ") && !strings.HasPrefix(line, "\t")
		}
	}
	return false
}

func (x *Executor) parseEnvelopeMessage(text string) (Command, error) {
	env, err := x.DecodeEnvelope([]byte(text))
	if err != nil {
		return Command{}, err
	}
	reg, ok := x.reg.lookup(env.Verb)
	if !ok {
		return Command{}, x.reg.unknownVerb(env.Verb)
	}
	if _, err := reg.decodeArgs(env.Arguments); err != nil {
		return Command{}, x.withUsage(reg, err)
	}
	args := env.Arguments
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	return Command{Verb: reg.info.Name, Arguments: args, Workspace: env.Workspace}, nil
}

type token struct {
	text   string
	quoted bool // any part was quoted or escaped
	eq     int  // index of the first unquoted '=' in text, or -1
}

// quoting says how words are written, in quote errors.
const quoting = `accepted: words separated by spaces; 'single' or "double" quotes group words; \ escapes one character`

// tokenize splits s shell-style: whitespace separates, 'single' quotes are
// literal, "double" quotes and backslash escape the next character.
func tokenize(s string) ([]token, error) {
	var out []token
	var cur strings.Builder
	in := false
	t := token{eq: -1}
	flush := func() {
		if in {
			t.text = cur.String()
			out = append(out, t)
		}
		cur.Reset()
		in = false
		t = token{eq: -1}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
			flush()
		case c == '\'':
			in, t.quoted = true, true
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unterminated ' quote (%s)", quoting)
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
		case c == '"':
			in, t.quoted = true, true
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, fmt.Errorf("unterminated \" quote (%s)", quoting)
			}
		case c == '\\' && i+1 < len(s):
			in, t.quoted = true, true
			i++
			cur.WriteByte(s[i])
		default:
			in = true
			if c == '=' && t.eq < 0 && !t.quoted {
				t.eq = cur.Len()
			}
			cur.WriteByte(c)
		}
	}
	flush()
	return out, nil
}

// bindArgs types inline tokens and an optional body against the verb's
// argument fields and returns the arguments JSON.
func (x *Executor) bindArgs(reg *registration, toks []token, body string) (json.RawMessage, error) {
	fields := reg.schema().Arguments.Fields
	byName := map[string]*Field{}
	norm := func(s string) string { return strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(s)) }
	for i := range fields {
		byName[norm(fields[i].Name)] = &fields[i]
	}
	vals := map[string]any{}
	set := func(f *Field, v any) error {
		if f.Kind == KindList {
			if l, ok := vals[f.Name].([]any); ok {
				if add, ok := v.([]any); ok {
					vals[f.Name] = append(l, add...)
					return nil
				}
			}
		} else if _, dup := vals[f.Name]; dup {
			return fmt.Errorf("argument %q given twice", f.Name)
		}
		vals[f.Name] = v
		return nil
	}
	required, trail := positionalFields(fields)
	var positionals []token
	listStarted := false
	for _, tk := range toks {
		if !listStarted && tk.eq > 0 {
			key := tk.text[:tk.eq]
			if f, ok := byName[norm(key)]; ok {
				v, err := typeValue(f, tk.text[tk.eq+1:])
				if err != nil {
					return nil, x.withUsage(reg, err)
				}
				if err := set(f, v); err != nil {
					return nil, x.withUsage(reg, err)
				}
				continue
			}
		}
		positionals = append(positionals, tk)
		// Once every required scalar before a trailing list is filled, the
		// rest belongs to the list verbatim.
		if n := len(trail); n > 0 && trail[n-1].Kind == KindList {
			free := 0
			for _, f := range trail[:n-1] {
				if _, ok := vals[f.Name]; !ok {
					free++
				}
			}
			if len(positionals) > free {
				listStarted = true
			}
		}
	}
	// Positionals fill the required fields not given by key, in order (an
	// optional trailing list last), then the optional positional ones; a
	// verb whose one argument is optional takes it by position too
	// (`/fs.listDir docs`).
	byPosition := byPositionOf(fields, trail)
	pi := 0
	for i, f := range byPosition {
		if _, ok := vals[f.Name]; ok {
			continue
		}
		if pi >= len(positionals) {
			break
		}
		if f.Kind == KindList && i == len(byPosition)-1 {
			list := make([]any, 0, len(positionals)-pi)
			for ; pi < len(positionals); pi++ {
				v, err := typeScalar(f.Elem, f.Name, positionals[pi].text)
				if err != nil {
					return nil, x.withUsage(reg, err)
				}
				list = append(list, v)
			}
			vals[f.Name] = list
			break
		}
		v, err := typeValue(f, positionals[pi].text)
		if err != nil {
			return nil, x.withUsage(reg, err)
		}
		vals[f.Name] = v
		pi++
	}
	if pi < len(positionals) {
		return nil, x.withUsage(reg, fmt.Errorf("too many arguments: %q is not expected (quote values that contain spaces, or use key=value)", positionals[pi].text))
	}
	if body = strings.TrimRight(body, " \t\r\n"); strings.TrimSpace(body) != "" {
		if err := x.bindBody(reg, fields, vals, body); err != nil {
			return nil, err
		}
	}
	// A trailing list that received nothing is an empty list: `/proc.run ls`.
	if n := len(trail); n > 0 && trail[n-1].Kind == KindList {
		if _, ok := vals[trail[n-1].Name]; !ok {
			allOthers := true
			for _, f := range trail[:n-1] {
				if _, ok := vals[f.Name]; !ok {
					allOthers = false
				}
			}
			if allOthers {
				vals[trail[n-1].Name] = []any{}
			}
		}
	}
	for _, f := range required {
		if _, ok := vals[f.Name]; !ok {
			return nil, x.withUsage(reg, fmt.Errorf("missing required argument %q (%s)", f.Name, f.Type))
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	// Emit in field order for stable, readable envelopes.
	buf.WriteByte('{')
	first := true
	for _, f := range fields {
		v, ok := vals[f.Name]
		if !ok {
			continue
		}
		if !first {
			buf.WriteByte(',')
		}
		first = false
		kb, _ := json.Marshal(f.Name)
		buf.Write(kb)
		buf.WriteByte(':')
		if err := enc.Encode(v); err != nil {
			return nil, x.withUsage(reg, err)
		}
		buf.Truncate(buf.Len() - 1) // Encode's newline
	}
	buf.WriteByte('}')
	raw := json.RawMessage(buf.Bytes())
	if _, err := reg.decodeArgs(raw); err != nil {
		return nil, x.withUsage(reg, err)
	}
	return raw, nil
}

// byPositionOf is the order in which positionals fill fields: the
// required ones and an optional trailing list (trail, positionalFields),
// then the optional ones marked positional when trail does not end in a
// list, or the one field of a verb whose one argument is optional.
func byPositionOf(fields []Field, trail []*Field) []*Field {
	if len(trail) == 0 && len(fields) == 1 && fields[0].Kind != KindList {
		return []*Field{&fields[0]}
	}
	if n := len(trail); n > 0 && trail[n-1].Kind == KindList {
		return trail
	}
	out := append([]*Field(nil), trail...)
	for i := range fields {
		if fields[i].Positional {
			out = append(out, &fields[i])
		}
	}
	return out
}

// bindBody merges the lines after the command: a YAML/JSON object of
// arguments, or, when exactly one required string argument is still missing,
// the text itself as that argument (so /fs.writeFile notes.txt + lines writes
// those lines).
func (x *Executor) bindBody(reg *registration, fields []Field, vals map[string]any, body string) error {
	var missing []*Field
	for i := range fields {
		if _, ok := vals[fields[i].Name]; !ok && fields[i].Required {
			missing = append(missing, &fields[i])
		}
	}
	trimmed := strings.TrimSpace(body)
	if j, err := YAMLToJSON([]byte(body+"\n"), x.opts.Limits); err == nil && len(j) > 0 && j[0] == '{' && (strings.HasPrefix(trimmed, "{") || yamlKeysKnown(j, fields)) {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(j, &obj); err != nil {
			return x.withUsage(reg, err)
		}
		for k, raw := range obj {
			var f *Field
			for i := range fields {
				if fields[i].Name == k {
					f = &fields[i]
				}
			}
			if f == nil {
				return x.withUsage(reg, fmt.Errorf("unknown argument %q in the message body", k))
			}
			if _, dup := vals[k]; dup {
				return x.withUsage(reg, fmt.Errorf("argument %q given twice (on the command line and in the body)", k))
			}
			var v any
			if err := json.Unmarshal(raw, &v); err != nil {
				return x.withUsage(reg, err)
			}
			vals[k] = v
		}
		return nil
	}
	if len(missing) == 1 && missing[0].Kind == KindString {
		vals[missing[0].Name] = body
		return nil
	}
	return x.withUsage(reg, fmt.Errorf("the lines after the command must be a YAML or JSON object of arguments"))
}

// yamlKeysKnown reports whether every key of the JSON object j is an argument
// name, so that text such as "note: buy milk" is taken as content, not keys.
func yamlKeysKnown(j []byte, fields []Field) bool {
	var obj map[string]json.RawMessage
	if json.Unmarshal(j, &obj) != nil {
		return false
	}
	for k := range obj {
		found := false
		for _, f := range fields {
			if f.Name == k {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func typeValue(f *Field, s string) (any, error) {
	if f.Kind == KindList {
		if strings.HasPrefix(strings.TrimSpace(s), "[") {
			j, err := YAMLToJSON([]byte(s), Limits{})
			if err != nil {
				return nil, fmt.Errorf("argument %q: %v", f.Name, err)
			}
			var l []any
			if err := json.Unmarshal(j, &l); err != nil {
				return nil, fmt.Errorf("argument %q: expected a list like [a, b], got %s", f.Name, s)
			}
			return l, nil
		}
		v, err := typeScalar(f.Elem, f.Name, s)
		if err != nil {
			return nil, err
		}
		return []any{v}, nil
	}
	if f.Kind == KindEnum {
		for _, e := range f.Enum {
			if s == e {
				return s, nil
			}
		}
		return nil, fmt.Errorf("argument %q: %q is not one of %s", f.Name, s, f.Type)
	}
	return typeScalar(f.Kind, f.Name, s)
}

func typeScalar(k Kind, name, s string) (any, error) {
	v, err := TypeWord(k, s)
	if err != nil {
		return nil, fmt.Errorf("argument %q: %w", name, err)
	}
	return v, nil
}

// TypeWord types one word of a chat command as a value of kind k, as the
// chat grammar types inline arguments: integers, numbers, true/yes/on/1 and
// false/no/off/0, YAML or JSON for objects; anything else stays text.
func TypeWord(k Kind, s string) (any, error) {
	switch k {
	case KindInt:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("expected an integer, got %q", s)
		}
		return n, nil
	case KindNumber:
		n, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("expected a number, got %q", s)
		}
		return n, nil
	case KindBool:
		switch strings.ToLower(s) {
		case "true", "yes", "on", "1":
			return true, nil
		case "false", "no", "off", "0":
			return false, nil
		}
		return nil, fmt.Errorf("expected true or false, got %q", s)
	case KindObject, KindMap, KindAny:
		j, err := YAMLToJSON([]byte(s), Limits{})
		if err != nil {
			return nil, err
		}
		var v any
		_ = json.Unmarshal(j, &v)
		return v, nil
	}
	return s, nil
}

// SplitWords splits s into words as the chat grammar does: whitespace
// separates words, 'single quotes' are literal, "double quotes" and a
// backslash escape the next character.
func SplitWords(s string) ([]string, error) {
	toks, err := tokenize(s)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(toks))
	for i, t := range toks {
		out[i] = t.text
	}
	return out, nil
}

// Usage is the one-line chat usage of a verb, e.g.
// "/fs.readRange <path> <startLine> <endLine> [includeLineNumbers=bool]".
func (x *Executor) Usage(name string) (string, bool) {
	reg, ok := x.reg.lookup(name)
	if !ok {
		return "", false
	}
	return reg.schema().Usage(), true
}

// Usage is the verb's chat usage line, as /help shows it:
// "/fs.readRange <path> <startLine> <endLine> [includeLineNumbers=bool]".
func (s VerbSchema) Usage() string {
	var b strings.Builder
	b.WriteString("/" + s.Name)
	_, trail := positionalFields(s.Arguments.Fields)
	for _, f := range trail {
		switch {
		case !f.Required:
			b.WriteString(" [" + f.Name + "…]")
		case f.Kind == KindList:
			b.WriteString(" <" + f.Name + "…>")
		default:
			b.WriteString(" <" + f.Name + ">")
		}
	}
	for _, f := range s.Arguments.Fields {
		if f.Positional {
			b.WriteString(" <" + f.Name + ">")
		}
	}
	for _, f := range s.Arguments.Fields {
		if !f.Required && !f.Positional && !slices.ContainsFunc(trail, func(t *Field) bool { return t.Name == f.Name }) {
			b.WriteString(" [" + f.Name + "=" + f.Type + "]")
		}
	}
	return b.String()
}

// withUsage turns err into an invalid_arguments *Error whose message shows
// the verb's usage line and argument schema.
func (x *Executor) withUsage(reg *registration, err error) error {
	s := reg.schema()
	msg := err.Error()
	var e *Error
	if errors.As(err, &e) {
		msg = e.Message
	}
	prefix := "Invalid arguments for " + s.Name + ": "
	if !strings.HasPrefix(msg, prefix) {
		msg = prefix + msg
	}
	idl := IDL(reg.argsType)
	if reg.alias != nil {
		idl = typeIDL(s.Arguments)
	}
	return &Error{Code: CodeInvalidArguments, Message: msg + "\nUsage: " + s.Usage() + "\n" + idl}
}

// positionalFields returns the required fields and the fields positionals
// fill, in order: the required ones, then an optional list when no
// required list ends them and no optional field is marked positional
// (proc.run's arguments, which may be absent: an absent list is an empty
// one), which takes the rest of the line.
func positionalFields(fields []Field) (required, trail []*Field) {
	var list *Field
	positional := false
	for i := range fields {
		switch {
		case fields[i].Required:
			required = append(required, &fields[i])
		case fields[i].Positional:
			positional = true
		case fields[i].Kind == KindList && list == nil:
			list = &fields[i]
		}
	}
	if positional {
		list = nil
	}
	trail = required
	if n := len(required); list != nil && (n == 0 || required[n-1].Kind != KindList) {
		trail = append(append([]*Field(nil), required...), list)
	}
	return required, trail
}
