package config

import (
	"fmt"
	"regexp"
	"time"
)

// Verbs tunes the verbs.
type Verbs struct {
	MaxWriteChars int      `yaml:"max_write_chars"`
	MaxReadBytes  Size     `yaml:"max_read_bytes"`
	Proc          Proc     `yaml:"proc"`
	Timeout       Duration `yaml:"timeout"` // bound on any verb call from chat
	// Progress: a call from chat still running after ProgressAfter shows
	// its progress (elapsed time, last lines), refreshed every
	// ProgressEvery.
	ProgressAfter Duration `yaml:"progress_after"`
	ProgressEvery Duration `yaml:"progress_every"`
}

// Proc is verbs.proc: how proc.run runs programs.
type Proc struct {
	DefaultTimeout Duration `yaml:"default_timeout"`
	MaxTimeout     Duration `yaml:"max_timeout"`
	MaxOutputBytes Size     `yaml:"max_output_bytes"`
	EnvAllow       []string `yaml:"env_allow"`
	// Per-call limits, applied by proc.run's supervisor.
	MaxProcs      int  `yaml:"max_procs"`       // processes at once
	MaxMemory     Size `yaml:"max_memory"`      // address space per process
	MaxCPUSeconds int  `yaml:"max_cpu_seconds"` // CPU time per process; 0: the call's timeout
	// KeepOutput: a call's stdout and stderr (proc.output) are removed this long after it started.
	KeepOutput Duration `yaml:"keep_output"`
	// User is whom a hub running as root runs programs as (a user name,
	// a uid, or uid:gid); empty means nobody, and root (or 0) keeps
	// root. A hub not running as root runs them as itself.
	User string `yaml:"user"`
}

// defaultProcEnv is the environment proc.run passes on by default.
var defaultProcEnv = []string{"PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TERM", "USER", "LOGNAME", "TMPDIR"}

func (vb *Verbs) applyDefaults(*Config) {
	setDefault(&vb.MaxWriteChars, 48000)
	setDefault(&vb.MaxReadBytes, 4<<20)
	setDefault(&vb.Timeout, Duration(15*time.Minute))
	setDefault(&vb.ProgressAfter, Duration(3*time.Second))
	setDefault(&vb.ProgressEvery, Duration(3*time.Second))
	p := &vb.Proc
	setDefault(&p.DefaultTimeout, Duration(60*time.Second))
	setDefault(&p.MaxTimeout, Duration(10*time.Minute))
	setDefault(&p.MaxOutputBytes, 16<<20)
	if len(p.EnvAllow) == 0 {
		p.EnvAllow = append([]string(nil), defaultProcEnv...)
	}
	setDefault(&p.MaxProcs, 256)
	setDefault(&p.MaxMemory, 4<<30)
	setDefault(&p.KeepOutput, Duration(168*time.Hour))
}

func (vb *Verbs) validate(_ *Config, v *validator) {
	if vb.MaxWriteChars <= 0 {
		v.bad("verbs.max_write_chars", " must be positive")
	}
	if vb.ProgressEvery < Duration(time.Second) {
		v.bad("verbs.progress_every", ": %s is too short (accepted: 1s or more; platforms limit how often a message may be edited)", vb.ProgressEvery)
	}
	vb.Proc.validate(v)
}

func (p *Proc) validate(v *validator) {
	if p.DefaultTimeout > p.MaxTimeout {
		v.bad("verbs.proc.default_timeout", " (%s) is above verbs.proc.max_timeout (%s)", p.DefaultTimeout, p.MaxTimeout)
	}
	if n := p.MaxProcs; n < 1 || n > 1<<20 {
		v.bad("verbs.proc.max_procs", ": %d is out of range (accepted: 1 to 1048576 processes at once)", n)
	}
	if m := p.MaxMemory; m < 16<<20 {
		v.bad("verbs.proc.max_memory", ": %s is too small (accepted: at least 16MiB, such as 512MiB or 4GiB; most programs cannot start below that)", m)
	}
	if k := p.KeepOutput; k < p.MaxTimeout || k < Duration(time.Minute) {
		v.bad("verbs.proc.keep_output", ": %s is too short (accepted: at least verbs.proc.max_timeout, %s, such as 24h or 168h)", k, p.MaxTimeout)
	}
	if p.MaxCPUSeconds < 0 {
		v.bad("verbs.proc.max_cpu_seconds", ": %d is negative (accepted: 0 for the call's timeout, or a number of seconds)", p.MaxCPUSeconds)
	}
	if err := ValidProcUser(p.User); err != nil {
		v.bad("verbs.proc.user", ": %v", err)
	}
}

// procUserSpec is what verbs.proc.user accepts: a user name, a uid, or
// uid:gid.
var procUserSpec = regexp.MustCompile(`^(?:[A-Za-z_][A-Za-z0-9_.-]{0,31}|[0-9]{1,10}(?::[0-9]{1,10})?)$`)

// ValidProcUser checks the form of verbs.proc.user (empty: not set). That
// the user exists is checked where the hub runs, when it starts.
func ValidProcUser(spec string) error {
	if spec != "" && !procUserSpec.MatchString(spec) {
		return fmt.Errorf("%q is not a user (accepted: a user name such as nobody, a uid such as 65534, uid:gid such as 1000:1000, or root)", spec)
	}
	return nil
}
