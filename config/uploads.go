package config

import (
	"path"
	"strings"
	"time"
)

// Uploads configures the files people send the hub with a message
// (docs/uploads.md): where fs.upload saves one sent without a path, the
// largest it saves, and how long its download may take.
type Uploads struct {
	// Dir is the directory, relative to the workspace, where a file sent
	// without a path is saved under its (cleaned) name.
	Dir string `yaml:"dir"`
	// MaxBytes is the largest file saved; larger ones are refused before
	// they are downloaded when their platform announces their size.
	MaxBytes Size `yaml:"max_bytes"`
	// Timeout bounds one download, from its first byte to its last.
	Timeout Duration `yaml:"timeout"`
}

func (u *Uploads) applyDefaults(*Config) {
	setDefault(&u.Dir, "uploads")
	setDefault(&u.MaxBytes, Size(50<<20))
	setDefault(&u.Timeout, Duration(5*time.Minute))
}

func (u *Uploads) validate(_ *Config, v *validator) {
	switch d := u.Dir; {
	case strings.HasPrefix(d, "/") || strings.Contains(d, `\`):
		v.bad("uploads.dir", ": %q must be relative to the workspace, with / between its parts (for example uploads or inbox/files)", d)
	case path.Clean(d) != d || d == ".." || strings.HasPrefix(d, "../"):
		v.bad("uploads.dir", ": %q must be a clean path inside the workspace (no .., no empty or . parts; for example uploads)", d)
	}
	if u.MaxBytes < 1 {
		v.bad("uploads.max_bytes", ": %d is not a size of at least 1 byte (for example 50MiB)", u.MaxBytes)
	}
	if u.Timeout < Duration(time.Second) {
		v.bad("uploads.timeout", ": %s is under a second (for example 5m)", u.Timeout)
	}
}
