package config

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Error is one problem of a configuration: where it is (the file, the line,
// the key path) and what is wrong, with what is accepted. A configuration
// with several problems gives an error joining one Error per problem (see
// errors.Join), in the order of their lines.
type Error struct {
	// File is the configuration file; empty when there is none (the
	// defaults, or a configuration given as bytes to Parse).
	File string
	// Line is the line of the key, or of its nearest parent written in the
	// file when the key itself is not (a required value left out); 0 when
	// neither is written.
	Line int
	// Key is the key path the problem is about, such as web.listen,
	// mcp.agents.claude.token or sessions.mounts[0].host_path; empty for
	// the file as a whole.
	Key string
	// Msg says what is wrong, naming the key, and what is accepted or how
	// to fix it.
	Msg string
	// what names the kind of file: "config", or "node config" for a node's.
	what string
}

// Error renders the problem as "config FILE: line N: MSG", dropping what
// is unknown.
func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(cmp.Or(e.what, "config") + " " + e.File + ": ")
	}
	if e.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	b.WriteString(e.Msg)
	return b.String()
}

// source is where a configuration came from: its file and the line of
// every key written in it, by key path (as Error.Key spells it).
type source struct {
	file  string
	what  string
	lines map[string]int
}

func newSource(file, what string) *source {
	return &source{file: file, what: what, lines: map[string]int{}}
}

// line returns the line of key, else of its nearest parent written in the
// file, else 0.
func (s *source) line(key string) int {
	if s == nil {
		return 0
	}
	for key != "" {
		if l, ok := s.lines[key]; ok {
			return l
		}
		key = parentKey(key)
	}
	return 0
}

// parentKey drops the last element of a key path: "a.b[2]" is "a.b",
// "a.b" is "a", "a" is "".
func parentKey(key string) string {
	i := strings.LastIndexAny(key, ".[")
	if i < 0 {
		return ""
	}
	return key[:i]
}

// childKey is the key path of key's field or entry name.
func childKey(key, name string) string {
	if key == "" {
		return name
	}
	return key + "." + name
}

// newError is a problem at line (0: the line of key, or its parent's).
func (s *source) newError(line int, key, msg string) *Error {
	e := &Error{Line: line, Key: key, Msg: msg}
	if s != nil {
		e.File, e.what = s.file, s.what
		if line == 0 {
			e.Line = s.line(key)
		}
	}
	return e
}

// validator collects the problems of a configuration, each placed at the
// line of its key.
type validator struct {
	src  *source
	errs []*Error
}

// add records the problem msg with key, at the line of at (or of its
// nearest written parent), else of key.
func (v *validator) add(at, key, msg string) {
	line := v.src.line(at)
	if line == 0 {
		line = v.src.line(key)
	}
	v.errs = append(v.errs, v.src.newError(line, key, msg))
}

// bad records a problem with key. The message is key followed by
// format: format starts with ": " or with a space ("web.listen" + ": %q is
// not host:port", "telegram.token" + " is empty …"), so the message always
// names the key first.
func (v *validator) bad(key, format string, args ...any) {
	v.add(key, key, key+fmt.Sprintf(format, args...))
}

// badAt is bad placed at the line of at, the key whose value makes key
// wrong (telegram.enabled for an empty telegram.token), when it is written.
func (v *validator) badAt(at, key, format string, args ...any) {
	v.add(at, key, key+fmt.Sprintf(format, args...))
}

// badFrom is bad for a value that came from from (an environment
// variable or a command-line flag) rather than the file: the message says
// so and names no line. An empty from is bad.
func (v *validator) badFrom(from, key, format string, args ...any) {
	if from == "" {
		v.bad(key, format, args...)
		return
	}
	e := &Error{Key: key, Msg: key + " (from " + from + ")" + fmt.Sprintf(format, args...)}
	if v.src != nil {
		e.File, e.what = v.src.file, v.src.what
	}
	v.errs = append(v.errs, e)
}

// firstWritten returns the first of keys written in the file, else the
// last: where to place a problem whose value may come from several keys.
func (v *validator) firstWritten(keys ...string) string {
	if v.src != nil {
		for _, k := range keys {
			if _, ok := v.src.lines[k]; ok {
				return k
			}
		}
	}
	return keys[len(keys)-1]
}

// oneOf checks an enumerated value.
func (v *validator) oneOf(key, value string, accepted ...string) {
	if !slices.Contains(accepted, value) {
		v.bad(key, ": %q is not accepted (accepted: %s)", value, strings.Join(accepted, ", "))
	}
}

// err joins the problems, in the order of their lines (those at no line
// last, in the order found); nil when there is none.
func (v *validator) err() error { return joinErrors(v.errs) }

func joinErrors(errs []*Error) error {
	if len(errs) == 0 {
		return nil
	}
	sorted := slices.Clone(errs)
	slices.SortStableFunc(sorted, func(a, b *Error) int {
		return cmp.Compare(lineOrder(a.Line), lineOrder(b.Line))
	})
	out := make([]error, len(sorted))
	for i, e := range sorted {
		out[i] = e
	}
	if len(out) == 1 {
		return out[0]
	}
	return errors.Join(out...)
}

func lineOrder(l int) int {
	if l == 0 {
		return math.MaxInt
	}
	return l
}

// item is the key path of a list's i-th item: "web.allowed_hosts[2]".
func item(key string, i int) string { return fmt.Sprintf("%s[%d]", key, i) }
