package config

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Duration is a time.Duration written as "30s", "5m", "168h".
type Duration time.Duration

// valueError is a value a type refuses, at its line. The decoder puts
// its message after the key path; decoded by yaml.v3 alone it reads
// "line N: …".
type valueError struct {
	line int
	msg  string
}

func (e *valueError) Error() string { return fmt.Sprintf("line %d: %s", e.line, e.msg) }

// What durations and sizes accept, for errors.
const (
	durationAccepted = "500ms, 30s, 5m, 168h"
	sizeAccepted     = "1048576, 64KiB, 4MiB, 1GiB, 10MB"
)

// UnmarshalYAML parses a Go duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return &valueError{n.Line, "expected a duration such as 30s, 5m or 168h"}
	}
	v, err := time.ParseDuration(strings.TrimSpace(n.Value))
	if err != nil {
		return &valueError{n.Line, fmt.Sprintf("%q is not a duration (accepted: %s)", n.Value, durationAccepted)}
	}
	*d = Duration(v)
	return nil
}

// D returns the time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

func (d Duration) String() string { return time.Duration(d).String() }

// Size is a byte count written as 1048576, "64KiB", "4MiB", "1GiB" or "10MB".
type Size int64

// UnmarshalYAML parses a byte size.
func (s *Size) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return &valueError{n.Line, "expected a size such as 4MiB"}
	}
	v, err := ParseSize(n.Value)
	if err != nil {
		return &valueError{n.Line, err.Error()}
	}
	*s = Size(v)
	return nil
}

// ParseSize parses "123", "64KiB", "4MiB", "1GiB", "10KB", "10MB", "1GB".
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1000}, {"MB", 1000_000}, {"GB", 1000_000_000}, {"B", 1}}
	mult := int64(1)
	for _, u := range units {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("%q is not a size (accepted: %s)", s, sizeAccepted)
	}
	return n * mult, nil
}

func (s Size) String() string {
	switch {
	case s >= 1<<30 && s%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", s>>30)
	case s >= 1<<20 && s%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", s>>20)
	case s >= 1<<10 && s%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", s>>10)
	}
	return strconv.FormatInt(int64(s), 10)
}

// Secret holds a token. It never prints itself: String, GoString, LogValue
// and MarshalText all redact, so a secret cannot reach a log or a dump by
// accident. Reveal returns the value for the one place that needs it.
type Secret struct{ v string }

// NewSecret wraps s.
func NewSecret(s string) Secret { return Secret{v: s} }

// Reveal returns the secret's value.
func (s Secret) Reveal() string { return s.v }

// IsSet reports whether the secret is non-empty.
func (s Secret) IsSet() bool { return s.v != "" }

func (s Secret) String() string {
	if s.v == "" {
		return ""
	}
	return "[redacted]"
}

// GoString redacts for %#v.
func (s Secret) GoString() string { return s.String() }

// LogValue redacts for log/slog.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// MarshalText redacts for encoders.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalYAML reads the (already expanded) value.
func (s *Secret) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return &valueError{n.Line, "expected a token as text, usually from the environment: ${NAME}"}
	}
	s.v = strings.TrimSpace(n.Value)
	return nil
}
