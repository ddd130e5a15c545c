package executor

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
)

// Renderer is implemented by result types that render themselves for people,
// from their typed fields and the call's typed arguments: args is the
// pointer to the verb's argument struct that Outcome.Args holds (nil when
// unknown). The text is Markdown with code fences, before any platform
// escaping or chunking. Results without it get a generic "key: value"
// rendering of their JSON.
type Renderer interface {
	Render(args any) string
}

// RenderText is the reply text for an outcome, as chat shows it: with raw
// set, the result JSON indented in a json code block; for a failure, the
// error (RenderError); otherwise the result's own rendering when it is a
// Renderer, or a generic listing of its JSON fields. The call's notes
// follow, one paragraph each.
func RenderText(out *Outcome, raw bool) string {
	return renderText(out, raw) + NotesText(out.Notes)
}

// NotesText is what RenderText appends to a rendering for the call's
// notes: each a paragraph.
func NotesText(notes []string) string {
	var text string
	for _, n := range notes {
		text += "\n\nℹ " + n
	}
	return text
}

func renderText(out *Outcome, raw bool) string {
	if raw {
		res := out.JSON()
		var b bytes.Buffer
		if json.Indent(&b, res, "", "  ") != nil {
			b.Reset()
			b.Write(res)
		}
		return Fence(b.String(), "json")
	}
	if !out.Succeeded() {
		return RenderError(out.Err)
	}
	if r, ok := out.Value.(Renderer); ok {
		return r.Render(out.Args)
	}
	return renderGeneric(out.Verb, out.JSON())
}

// RenderError is one clear line with the error code; a message of several
// lines (usage and schema) follows in a code block.
func RenderError(e *Error) string {
	first, rest, _ := strings.Cut(e.Message, "\n")
	s := fmt.Sprintf("⚠ %s (%s)", first, e.Code)
	if strings.TrimSpace(rest) != "" {
		s += "\n" + Fence(rest, "")
	}
	return s
}

// Fence wraps text in a code fence longer than any backtick run inside it,
// so output containing ``` cannot close the block early.
func Fence(text, lang string) string {
	f := fenceFor(text)
	text = strings.TrimRight(text, "\n")
	return f + lang + "\n" + text + "\n" + f
}

// Headed is head, a newline and text in a code fence as Fence makes it, in
// one allocation: a large file's text is copied once.
func Headed(head, text, lang string) string {
	before, body, after := HeadedParts(head, text, lang)
	return before + body + after
}

// HeadedParts is Headed's text in three parts, before + body + after,
// where body is text without its final line ends: a surface that sends
// text whose encoding it already holds (BodyRenderer) copies that part.
func HeadedParts(head, text, lang string) (before, body, after string) {
	f := fenceFor(text)
	return head + "\n" + f + lang + "\n", strings.TrimRight(text, "\n"), "\n" + f
}

// BodyRenderer is a Renderer whose text holds, whole, a string its result
// JSON holds too (a file's content), so that a surface sending both, as
// MCP's text and structured content, escapes that string once. Given enc,
// the result JSON as its AppendJSON wrote it, RenderBody returns Render's
// text as before + body + after, where enc[start:end] is body's JSON
// encoding without its quotes; ok is false when the text does not hold
// the string (a binary file) or enc is not that result's encoding.
type BodyRenderer interface {
	Renderer
	RenderBody(args any, enc []byte) (before, after string, start, end int, ok bool)
}

// fenceFor is the code fence for text: one backtick more than its longest
// run of backticks, and at least three.
func fenceFor(text string) string {
	longest := 0
	for i := strings.IndexByte(text, '`'); i >= 0; {
		j := i + 1
		for j < len(text) && text[j] == '`' {
			j++
		}
		longest = max(longest, j-i)
		next := strings.IndexByte(text[j:], '`')
		if next < 0 {
			break
		}
		i = j + next
	}
	return strings.Repeat("`", max(3, longest+1))
}

// renderGeneric shows a successful result JSON as "key: value" lines under
// "✓ verb", keys sorted, leaving out succeeded, errorMessage and errorCode:
// long or multi-line strings go in code blocks, objects and lists in json
// code blocks. It is the rendering of results that are not a Renderer.
func renderGeneric(verb string, result []byte) string {
	var r map[string]any
	_ = json.Unmarshal(result, &r)
	keys := make([]string, 0, len(r))
	for k := range r {
		if k != "succeeded" && k != "errorMessage" && k != "errorCode" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	if len(keys) == 0 {
		return fmt.Sprintf("✓ %s done.", verb)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "✓ %s", verb)
	for _, k := range keys {
		switch v := r[k].(type) {
		case string:
			if strings.Contains(v, "\n") || len(v) > 80 {
				fmt.Fprintf(&b, "\n%s:\n%s", k, Fence(v, ""))
			} else {
				fmt.Fprintf(&b, "\n%s: %s", k, v)
			}
		case map[string]any, []any:
			j, _ := json.MarshalIndent(v, "", "  ")
			fmt.Fprintf(&b, "\n%s:\n%s", k, Fence(string(j), "json"))
		default:
			j, _ := json.Marshal(v)
			fmt.Fprintf(&b, "\n%s: %s", k, j)
		}
	}
	return b.String()
}

// DecodeOutcome is the inverse of Outcome.JSON: it rebuilds the outcome of
// a call of the named verb from its arguments and result JSON, decoded
// strictly into the verb's types, so that a result received as JSON (from
// another process, or a mirror) renders as one run here does. Errors are
// *Error: unknown_verb, invalid_arguments, or invalid_envelope for a result
// that does not fit the verb's result type.
func (r *Registry) DecodeOutcome(verb string, args, result json.RawMessage) (*Outcome, error) {
	reg, ok := r.lookup(verb)
	if !ok {
		return nil, r.unknownVerb(verb)
	}
	a, err := reg.decodeArgs(args)
	if err != nil {
		return nil, err
	}
	val := reflect.New(reg.resultType).Interface()
	dec := json.NewDecoder(bytes.NewReader(result))
	dec.DisallowUnknownFields()
	if err := dec.Decode(val); err != nil {
		return nil, Errorf(CodeInvalidEnvelope, "Invalid result for %s: %v", reg.info.Name, strings.TrimPrefix(err.Error(), "json: "))
	}
	out := &Outcome{Verb: reg.info.Name, Args: a}
	if res := val.(resultHolder).verbResult(); !res.Succeeded {
		out.Err = &Error{Code: res.ErrorCode, Message: res.ErrorMessage}
		return out, nil
	}
	out.Value = val
	return out, nil
}
