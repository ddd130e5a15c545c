package executor

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Envelope is one verb call: {verb, arguments}. ID is an optional caller
// token that transports such as `hub exec --stdio` echo back.
type Envelope struct {
	Verb      string          `json:"verb"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	ID        json.RawMessage `json:"id,omitempty"`
	// Workspace names the configured workspace the call acts in; empty
	// lets the hub resolve it (see docs/workspaces.md).
	Workspace string `json:"workspace,omitempty"`
}

// Outcome is the result of one call, before and after encoding.
type Outcome struct {
	// Verb is the canonical verb name; empty when the verb was unknown.
	Verb string
	// ID is the envelope's id, echoed.
	ID json.RawMessage
	// Args is the decoded arguments (a pointer to the verb's argument
	// struct), nil when the verb was unknown or they did not decode; a
	// Renderer reads them.
	Args any
	// Value is the typed result (a pointer to the verb's result struct) on
	// success, nil on failure.
	Value any
	// Err is nil on success.
	Err *Error
	// Notes are remarks for people the verb made besides its result (see
	// Note); RenderText shows them, the result JSON does not carry them.
	Notes []string
	// Files are the files the verb sent as files (SendFile), for the
	// surface to deliver after the reply's text; the result JSON does not
	// carry them.
	Files    []SentFile
	Duration time.Duration
	// Encoded, when set, is the result JSON as JSON gave it, kept by whoever
	// encoded it first (the hub, for the mirror's record of an API call) so
	// that the surface answering the call does not encode a large result
	// again. Whoever changes Value or Err afterwards sets it to nil.
	Encoded []byte
}

// EncodedJSON is the result JSON (see JSON), encoded the first time it is
// asked for and kept in Encoded: the mirror's record and the surface's
// answer share one encoding.
func (o *Outcome) EncodedJSON() []byte {
	if o.Encoded == nil {
		o.Encoded = o.AppendJSON(encodedBuffers.Get(0))
	}
	return o.Encoded
}

// encodedBuffers are the buffers of encodings given back (Release),
// each for the next EncodedJSON.
var encodedBuffers = Pool[byte]{Max: 8 << 20}

// Releaser is a result holding memory a surface may give back for the
// next calls' results once it holds the last reference to the outcome
// (Release): a file read whole shares the buffer it was read into.
type Releaser interface {
	Release()
}

// Release gives back what the outcome holds for the next outcomes: the
// buffer of its encoding (EncodedJSON) and the result's own (Releaser),
// and clears Encoded and Value, so that a later use finds nothing rather
// than memory another call writes. Only the last holder of the outcome may
// call it, once nothing reads it any more: a surface that has written its
// answer (the direct path of `hub mcp`). A large result, as large as the
// file a read returns, is then not garbage to collect at every call.
func (o *Outcome) Release() {
	encodedBuffers.Put(o.Encoded)
	o.Encoded = nil
	if r, ok := o.Value.(Releaser); ok {
		r.Release()
	}
	o.Value = nil
}

// Succeeded reports whether the verb ran and returned no error.
func (o *Outcome) Succeeded() bool { return o.Err == nil }

// JSON encodes the result as the verb's result JSON (camelCase, with
// succeeded, errorMessage and errorCode). Failures carry only those fields.
func (o *Outcome) JSON() []byte { return o.AppendJSON(nil) }

// AppendJSON appends the result JSON (see JSON) to dst, so that a caller
// writing many results, such as `hub exec --stdio`, encodes each into its
// output buffer without a copy of its own.
func (o *Outcome) AppendJSON(dst []byte) []byte {
	if o.Encoded != nil {
		return append(dst, o.Encoded...)
	}
	if o.Err != nil {
		r := Result{Succeeded: false, ErrorMessage: o.Err.Message, ErrorCode: o.Err.Code}
		return append(AppendResultJSON(dst, &r), '}')
	}
	v := o.Value
	if a, ok := v.(JSONAppender); ok {
		return a.AppendJSON(dst)
	}
	out, err := AppendEncodingJSON(dst, v)
	if err != nil {
		fb, _ := json.Marshal(&Result{Succeeded: false, ErrorCode: CodeInternal, ErrorMessage: "encode result: " + err.Error()})
		return append(dst, fb...)
	}
	return out
}

// AppendEncodingJSON appends v as encoding/json encodes it with HTML
// escaping off, without the trailing newline: the encoding of a result
// that does not encode itself, and what a JSONAppender must reproduce.
// On error dst is returned as it was.
func AppendEncodingJSON(dst []byte, v any) ([]byte, error) {
	e := encoders.Get().(*resultEncoder)
	defer func() {
		if e.buf.Cap() <= maxPooledResult { // a large result's buffer is not kept
			encoders.Put(e)
		}
	}()
	e.buf.Reset()
	if err := e.enc.Encode(v); err != nil {
		return dst, err
	}
	res := bytes.TrimRight(e.buf.Bytes(), "\n")
	if dst == nil {
		return bytes.Clone(res), nil // exactly its length, as Outcome.JSON always returned
	}
	return append(dst, res...), nil
}

// resultEncoder is a JSON encoder (HTML left unescaped) with its buffer,
// pooled: a result is encoded into the buffer and copied out.
type resultEncoder struct {
	buf bytes.Buffer
	enc *json.Encoder
}

// maxPooledResult is the largest encoding buffer kept for reuse.
const maxPooledResult = 64 << 10

var encoders = sync.Pool{New: func() any {
	e := &resultEncoder{}
	e.enc = json.NewEncoder(&e.buf)
	e.enc.SetEscapeHTML(false)
	return e
}}

// DecodeEnvelope parses a YAML or JSON envelope strictly: valid UTF-8, within
// the size, depth and alias limits, the keys verb, arguments, id and
// workspace, no others.
// Errors are *Error with code invalid_envelope.
func (x *Executor) DecodeEnvelope(input []byte) (Envelope, error) {
	lim := x.opts.Limits
	if err := x.checkInput(input); err != nil {
		return Envelope{}, err
	}
	// The envelope's arguments and id are slices of data: copy the caller's
	// buffer, which it may reuse once this returns.
	data := bytes.Clone(input)
	if len(bytes.TrimSpace(data)) == 0 {
		return Envelope{}, Errorf(CodeInvalidEnvelope, "Invalid envelope: input is empty; expected {verb: <name>, arguments: {...}} in YAML or JSON")
	}
	if bytes.TrimLeft(data, " \t\r\n")[0] != '{' {
		j, err := YAMLToJSON(data, lim)
		if err != nil {
			return Envelope{}, Errorf(CodeInvalidEnvelope, "Invalid envelope: %v", err)
		}
		data = j
	}
	// YAMLToJSON's output is scanned too: it yields the members, and a
	// YAML document that is not a mapping is refused below like JSON.
	scan, err := scanJSON(data, lim.MaxDepth)
	defer scan.release()
	members := scan.top
	if err != nil {
		return Envelope{}, Errorf(CodeInvalidEnvelope, "Invalid envelope: %v", err)
	}
	if jsonKind(data) != "an object" { // jsonKind trims
		return Envelope{}, Errorf(CodeInvalidEnvelope, "Invalid envelope: expected an object {verb: <name>, arguments: {...}}, got %s", jsonKind(data))
	}
	var env Envelope
	var verb, workspace []byte
	haveVerb, haveWorkspace := false, false
	for _, m := range members {
		switch {
		case m.is("verb"):
			verb, haveVerb = m.val, true
		case m.is("arguments"):
			env.Arguments = m.val
		case m.is("id"):
			env.ID = m.val
		case m.is("workspace"):
			workspace, haveWorkspace = m.val, true
		}
	}
	for _, m := range members {
		if !m.is("verb") && !m.is("arguments") && !m.is("id") && !m.is("workspace") {
			return env, Errorf(CodeInvalidEnvelope, "Invalid envelope: unknown key %q (accepted: verb, arguments, id, workspace)", m.key)
		}
	}
	if !haveVerb {
		return env, Errorf(CodeInvalidEnvelope, "Invalid envelope: missing \"verb\" (accepted: verb, arguments, id, workspace)")
	}
	// Decoded into variables of their own, so that env, returned by
	// value, stays on the stack.
	if env.Verb = x.plainVerb(verb); env.Verb == "" {
		var s string
		err := json.Unmarshal(verb, &s)
		if env.Verb = s; err != nil || env.Verb == "" {
			return env, Errorf(CodeInvalidEnvelope, "Invalid envelope: \"verb\" must be a non-empty string, got %s", jsonKind(verb))
		}
	}
	if haveWorkspace {
		var s string
		err := json.Unmarshal(workspace, &s)
		if env.Workspace = s; err != nil || env.Workspace == "" {
			return env, Errorf(CodeInvalidEnvelope, "Invalid envelope: \"workspace\" must be the name of a configured workspace (a non-empty string), got %s", jsonKind(workspace))
		}
	}
	return env, nil
}

// checkInput checks an envelope's size and encoding, before its syntax.
func (x *Executor) checkInput(input []byte) error {
	if lim := x.opts.Limits; len(input) > lim.MaxInputBytes {
		return Errorf(CodeTooLarge, "Envelope is %d bytes, over the %d-byte limit", len(input), lim.MaxInputBytes)
	}
	if !utf8.Valid(input) {
		return Errorf(CodeInvalidEnvelope, "Invalid envelope: input is not valid UTF-8 (at byte %d); send UTF-8 text, and binary data as base64", invalidUTF8At(input))
	}
	return nil
}

// EncodeEnvelope is the envelope of a call a surface decoded from its own
// framing (an MCP tools/call: the verb it looked up, the arguments it was
// sent), with that envelope's JSON, {"verb":…,"arguments":…} as
// encoding/json writes it: the text a record of the call keeps. The JSON is
// checked as DecodeEnvelope checks its input (size, UTF-8, nesting,
// duplicate keys), with the same errors (*Error; the JSON is returned with
// them), and the envelope's Arguments are its slice of the JSON, as
// DecodeEnvelope returns them; nothing is decoded. An error that is not an
// *Error means the arguments are not JSON at all: no JSON is returned.
func (x *Executor) EncodeEnvelope(verb string, args json.RawMessage) (Envelope, []byte, error) {
	text, err := json.Marshal(struct {
		Verb      string          `json:"verb"`
		Arguments json.RawMessage `json:"arguments"`
	}{verb, args})
	if err != nil {
		return Envelope{}, nil, fmt.Errorf("encode the envelope of %s: %w", verb, err)
	}
	if verb == "" {
		return Envelope{}, text, Errorf(CodeInvalidEnvelope, "Invalid envelope: \"verb\" must be a non-empty string, got a string")
	}
	if err := x.checkInput(text); err != nil {
		return Envelope{}, text, err
	}
	scan, err := scanJSON(text, x.opts.Limits.MaxDepth)
	defer scan.release()
	if err != nil {
		return Envelope{}, text, Errorf(CodeInvalidEnvelope, "Invalid envelope: %v", err)
	}
	env := Envelope{Verb: verb}
	for _, m := range scan.top {
		if m.is("arguments") {
			env.Arguments = m.val
		}
	}
	return env, text, nil
}

// plainVerb returns the value of a JSON string literal without escapes, ""
// for anything else. A verb's registered name, spelled exactly, is returned
// as the registry's own string, without a copy.
func (x *Executor) plainVerb(raw []byte) string {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' || bytes.IndexByte(raw, '\\') >= 0 {
		return ""
	}
	name := raw[1 : len(raw)-1]
	if x.reg != nil {
		x.reg.mu.RLock()
		reg, ok := x.reg.verbs[string(name)]
		x.reg.mu.RUnlock()
		if ok && reg.info.Name == string(name) {
			return reg.info.Name
		}
	}
	return string(name)
}

// decodeArgs decodes raw JSON arguments into a new *A strictly: an object,
// exactly the declared keys (case-sensitive), every required key present and
// non-null, and values of the right types.
func (reg *registration) decodeArgs(raw json.RawMessage) (any, error) {
	if reg.alias != nil {
		return reg.decodeAlias(raw)
	}
	ptr := reflect.New(reg.argsType)
	fields, known := reg.argFields, reg.argKnown
	raw = bytes.TrimSpace(raw)
	var members []jsonMember
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		// No arguments at all: enough for a verb that requires none.
		var req []string
		for _, f := range fields {
			if f.required {
				req = append(req, fmt.Sprintf("%s (%s)", f.name, typeSpec(f.Type)))
			}
		}
		if len(req) > 0 {
			return nil, reg.argError("\"arguments\" is missing; this verb requires %s", strings.Join(req, ", "))
		}
		return ptr.Interface(), nil
	}
	if raw[0] != '{' {
		return nil, reg.argError("arguments must be an object, got %s", jsonKind(raw))
	}
	// The envelope was checked whole (syntax, depth, duplicate keys); this
	// scan only lists the arguments' members.
	scan, err := scanJSON(raw, maxArgDepth)
	defer scan.release()
	if err != nil {
		return nil, reg.argError("arguments must be an object, got %s", jsonKind(raw))
	}
	members = scan.top
	var unknown []string
	for _, m := range members {
		if !known[string(m.key)] {
			unknown = append(unknown, string(m.key))
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		k := unknown[0]
		msg := fmt.Sprintf("unknown argument %q", k)
		for _, f := range fields {
			if strings.EqualFold(f.name, k) || strings.EqualFold(strings.NewReplacer("_", "", "-", "").Replace(k), f.name) {
				msg += fmt.Sprintf(" (did you mean %q?)", f.name)
				break
			}
		}
		return nil, reg.argError("%s; accepted: %s", msg, fieldNames(fields))
	}
	for _, f := range fields {
		if !f.required {
			continue
		}
		present := false
		for _, m := range members {
			if string(m.key) == f.name {
				present = !bytes.Equal(m.val, []byte("null"))
				break
			}
		}
		if !present {
			return nil, reg.argError("missing required argument %q (%s)", f.name, typeSpec(f.Type))
		}
	}
	// Every key is a declared field, spelled exactly, and none appears
	// twice: each member is decoded into its field.
	args := ptr.Elem()
	for _, m := range members {
		f := fieldNamed(fields, m.key)
		fv, err := args.FieldByIndexErr(f.Index)
		if err != nil { // a field of a nil embedded pointer: decode the whole object
			if err := json.Unmarshal(raw, ptr.Interface()); err != nil {
				return nil, reg.argError("%v", strings.TrimPrefix(err.Error(), "json: "))
			}
			return ptr.Interface(), nil
		}
		if f.Type == stringType && len(m.val) > 0 && m.val[0] == '"' && bytes.IndexByte(m.val, '\\') < 0 {
			fv.SetString(string(m.val[1 : len(m.val)-1]))
			continue
		}
		if err := json.Unmarshal(m.val, fv.Addr().Interface()); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				field := f.name
				if te.Field != "" {
					field += "." + te.Field
				}
				return nil, reg.argError("argument %q: expected %s, got %s", field, typeSpecFor(te), te.Value)
			}
			return nil, reg.argError("argument %q: %v", f.name, strings.TrimPrefix(err.Error(), "json: "))
		}
	}
	return ptr.Interface(), nil
}

var stringType = reflect.TypeFor[string]()

// fieldNamed returns the field whose JSON name is key; decodeArgs has
// checked that there is one.
func fieldNamed(fields []structField, key []byte) *structField {
	for i := range fields {
		if fields[i].name == string(key) {
			return &fields[i]
		}
	}
	panic("executor: no field " + string(key))
}

// maxArgDepth bounds the nesting of arguments given to Run without an
// envelope (DecodeEnvelope's own, lower limit applies to envelopes).
const maxArgDepth = 512

func (reg *registration) argError(format string, args ...any) error {
	return &Error{Code: CodeInvalidArguments, Message: fmt.Sprintf("Invalid arguments for %s: %s", reg.info.Name, fmt.Sprintf(format, args...))}
}

func fieldNames(fields []structField) string {
	if len(fields) == 0 {
		return "none (this verb takes no arguments)"
	}
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.name
		if !f.required {
			names[i] += "?"
		}
	}
	return strings.Join(names, ", ")
}

func typeSpec(t reflect.Type) string {
	s, _ := newIDLBuilder().spec(t)
	return s
}

// typeSpecFor names the expected type of the field a type error points at.
func typeSpecFor(te *json.UnmarshalTypeError) string {
	if te.Type != nil {
		return typeSpec(te.Type)
	}
	return "another type"
}

func jsonKind(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(b)
}
