package config

import (
	"time"
)

// Mirror tunes the JSONL mirrors.
type Mirror struct {
	RotateBytes Size `yaml:"rotate_bytes"`
	// KeepRuns and KeepAge are the older spelling of Retention: when set,
	// they give keep_runs and keep_age of every kind of run that does not
	// set its own (negative: no limit).
	KeepRuns int      `yaml:"keep_runs"`
	KeepAge  Duration `yaml:"keep_age"`
	// Retention is which runs pruning removes, per kind.
	Retention MirrorRetention `yaml:"retention"`
	// MaxTextBytes bounds the text kept in one mirror record; longer texts
	// keep their size, preview and SHA-256 and are marked truncated.
	MaxTextBytes Size `yaml:"max_text_bytes"`
	// CLI says which CLI calls are mirrored: "changes" (default: write
	// verbs, proc.run and deliveries) or "all" (read-only verbs too).
	CLI string `yaml:"cli"`
}

// Values of mirror.cli.
const (
	MirrorCLIChanges = "changes"
	MirrorCLIAll     = "all"
)

func (m *Mirror) applyDefaults(*Config) {
	setDefault(&m.RotateBytes, 64<<20)
	m.applyRetentionDefaults()
	setDefault(&m.MaxTextBytes, 64<<10)
	setDefault(&m.CLI, MirrorCLIChanges)
}

func (m *Mirror) validate(_ *Config, v *validator) {
	v.oneOf("mirror.cli", m.CLI, MirrorCLIChanges, MirrorCLIAll)
	if m.RotateBytes < 4096 {
		v.bad("mirror.rotate_bytes", ": %s is too small (at least 4KiB)", m.RotateBytes)
	}
	if m.MaxTextBytes < 1024 || m.MaxTextBytes > 64<<20 {
		v.bad("mirror.max_text_bytes", ": %s is out of range (1KiB to 64MiB)", m.MaxTextBytes)
	}
	m.validateRetention(v)
}

// MirrorRetention is mirror.retention: which mirror runs pruning removes,
// for each kind of run apart (docs/state.md, "Retention"). The runs of
// `hub serve` hold the chat history; every CLI invocation that mirrors
// something has a run of its own.
type MirrorRetention struct {
	Serve RunRetention `yaml:"serve"`
	CLI   RunRetention `yaml:"cli"`
}

// RunRetention is the retention of one kind of run. Each key left out takes
// the older mirror.keep_runs / mirror.keep_age when that is set, else its
// default; after Load none is nil. Zero means no limit.
type RunRetention struct {
	// KeepAge removes runs that started longer ago.
	KeepAge *Duration `yaml:"keep_age"`
	// KeepRuns keeps at most this many runs of the kind.
	KeepRuns *int `yaml:"keep_runs"`
	// KeepBytes keeps the kind's runs within this size on disk.
	KeepBytes *Size `yaml:"keep_bytes"`
	// MinRuns is how many runs of the kind, the newest, stay whatever their
	// age or size.
	MinRuns *int `yaml:"min_runs"`
}

// Defaults of mirror.retention.
var (
	defaultServeRetention = runRetentionValues{keepAge: 720 * time.Hour, keepRuns: 50, keepBytes: 0, minRuns: 3}
	defaultCLIRetention   = runRetentionValues{keepAge: 720 * time.Hour, keepRuns: 1000, keepBytes: 256 << 20, minRuns: 0}
)

// Bounds of mirror.retention.
const (
	minRetentionAge   = time.Hour
	minRetentionBytes = 1 << 20
)

type runRetentionValues struct {
	keepAge   time.Duration
	keepRuns  int
	keepBytes int64
	minRuns   int
}

// Values returns the retention's values (zero: no limit) once Load has
// filled them in.
func (r RunRetention) Values() (keepAge time.Duration, keepRuns int, keepBytes int64, minRuns int) {
	if r.KeepAge != nil {
		keepAge = r.KeepAge.D()
	}
	if r.KeepRuns != nil {
		keepRuns = *r.KeepRuns
	}
	if r.KeepBytes != nil {
		keepBytes = int64(*r.KeepBytes)
	}
	if r.MinRuns != nil {
		minRuns = *r.MinRuns
	}
	return keepAge, keepRuns, keepBytes, minRuns
}

// applyRetentionDefaults fills in every retention key left out: from the
// older mirror.keep_runs and mirror.keep_age when set (for both kinds; a
// negative value is no limit), else from the defaults.
func (m *Mirror) applyRetentionDefaults() {
	for _, k := range []struct {
		r   *RunRetention
		def runRetentionValues
	}{{&m.Retention.Serve, defaultServeRetention}, {&m.Retention.CLI, defaultCLIRetention}} {
		def := k.def
		if m.KeepRuns != 0 {
			def.keepRuns = max(m.KeepRuns, 0)
		}
		if m.KeepAge != 0 {
			def.keepAge = max(m.KeepAge.D(), 0)
		}
		if k.r.KeepRuns == nil {
			k.r.KeepRuns = &def.keepRuns
		}
		if k.r.KeepAge == nil {
			d := Duration(def.keepAge)
			k.r.KeepAge = &d
		}
		if k.r.KeepBytes == nil {
			s := Size(def.keepBytes)
			k.r.KeepBytes = &s
		}
		if k.r.MinRuns == nil {
			n := def.minRuns
			if keep := *k.r.KeepRuns; keep > 0 {
				n = min(n, keep)
			}
			k.r.MinRuns = &n
		}
	}
}

// validateRetention checks mirror.retention, filled in from the older keys.
func (m *Mirror) validateRetention(v *validator) {
	for _, k := range []struct {
		key string
		r   RunRetention
	}{{"mirror.retention.serve", m.Retention.Serve}, {"mirror.retention.cli", m.Retention.CLI}} {
		keepAge, keepRuns, keepBytes, minRuns := k.r.Values()
		if keepAge != 0 && keepAge < minRetentionAge {
			v.badAt(v.firstWritten(k.key+".keep_age", "mirror.keep_age", k.key), k.key+".keep_age", ": %s is out of range (accepted: 0 for any age, or at least %s, such as 720h)%s", keepAge, minRetentionAge, olderKey("keep_age", m.KeepAge != 0))
		}
		if keepRuns < 0 {
			v.bad(k.key+".keep_runs", ": %d is out of range (accepted: 0 for any number, or a number of runs)", keepRuns)
		}
		if keepBytes != 0 && keepBytes < minRetentionBytes {
			v.bad(k.key+".keep_bytes", ": %s is out of range (accepted: 0 for any size, or at least 1MiB, such as 256MiB)", Size(keepBytes))
		}
		switch {
		case minRuns < 0:
			v.bad(k.key+".min_runs", ": %d is out of range (accepted: 0 or more)", minRuns)
		case keepRuns > 0 && minRuns > keepRuns:
			v.badAt(v.firstWritten(k.key+".min_runs", k.key+".keep_runs", "mirror.keep_runs", k.key), k.key+".min_runs", ": %d is more than keep_runs, %d (accepted: 0 to keep_runs)%s", minRuns, keepRuns, olderKey("keep_runs", m.KeepRuns != 0))
		}
	}
}

// olderKey says, when set, that mirror.<key> gave a value left out.
func olderKey(key string, set bool) string {
	if !set {
		return ""
	}
	return "; mirror." + key + " sets it when it is left out"
}
