package config

import (
	"path/filepath"
	"time"
)

// Outbox tunes delivery.
type Outbox struct {
	Concurrency    int      `yaml:"concurrency"`
	MaxAttempts    int      `yaml:"max_attempts"`
	BackoffBase    Duration `yaml:"backoff_base"`
	BackoffMax     Duration `yaml:"backoff_max"`
	SendTimeout    Duration `yaml:"send_timeout"`
	Retention      Duration `yaml:"retention"`
	OverflowChunks int      `yaml:"overflow_chunks"`
	ChunkMarkers   bool     `yaml:"chunk_markers"`
	// LocalRoots are the absolute directories outside the state directory
	// that local:<path> targets may write in; empty by default, so local
	// targets stay in the state directory's pma/.
	LocalRoots []string `yaml:"local_roots"`
}

func (o *Outbox) applyDefaults(*Config) {
	setDefault(&o.Concurrency, 64)
	setDefault(&o.MaxAttempts, 10)
	setDefault(&o.BackoffBase, Duration(time.Second))
	setDefault(&o.BackoffMax, Duration(5*time.Minute))
	setDefault(&o.SendTimeout, Duration(30*time.Second))
	setDefault(&o.Retention, Duration(168*time.Hour))
	setDefault(&o.OverflowChunks, 4)
}

func (o *Outbox) validate(_ *Config, v *validator) {
	if o.Concurrency < 1 || o.Concurrency > 10000 {
		v.bad("outbox.concurrency", ": %d is out of range (1 to 10000)", o.Concurrency)
	}
	if o.MaxAttempts < 1 {
		v.bad("outbox.max_attempts", " must be at least 1")
	}
	if o.BackoffBase > o.BackoffMax {
		v.bad("outbox.backoff_base", " (%s) is above outbox.backoff_max (%s)", o.BackoffBase, o.BackoffMax)
	}
	if o.OverflowChunks < 1 {
		v.bad("outbox.overflow_chunks", " must be at least 1")
	}
	for i, r := range o.LocalRoots {
		if !filepath.IsAbs(r) || filepath.Clean(r) == string(filepath.Separator) {
			v.badAt(item("outbox.local_roots", i), "outbox.local_roots", ": %q must be an absolute directory other than /", r)
		}
	}
}
