package config

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	"gopkg.in/yaml.v3"

	"github.com/a6afc2ce/hermes-hub/chat"
)

// Schedules is the schedules section: calls the hub makes on its own at the
// times of a cron expression, each as an identity of its own, with the
// result delivered to delivery targets (docs/chatops.md).
type Schedules map[string]Schedule

// Schedule is one schedule, under schedules: NAME.
type Schedule struct {
	// Cron is when it runs: five fields (minute, hour, day of month,
	// month, day of week), or @yearly, @monthly, @weekly, @daily
	// (@midnight) or @hourly.
	Cron string `yaml:"cron"`
	// TimeZone is the zone the expression is read in, an IANA name such
	// as Europe/Berlin (default UTC).
	TimeZone string `yaml:"time_zone"`
	// Run is the call it makes.
	Run ScheduleRun `yaml:"run"`
	// Identity is who makes the call, schedule:<name> (default
	// schedule:<the schedule's name>); its roles come from access.grants.
	Identity string `yaml:"identity"`
	// Deliver lists the target keys the result goes to (none: it is only
	// mirrored).
	Deliver []string `yaml:"deliver"`
	// Missed says what a start of the hub does with the times that passed
	// while it was down: skip them (default), or run_once, for the latest.
	Missed string `yaml:"missed"`
}

// ScheduleRun is the call of a schedule: a verb and its arguments, or a
// named command (commands.<name>) and its parameters, in a workspace.
type ScheduleRun struct {
	Verb      string    `yaml:"verb"`
	Arguments Arguments `yaml:"arguments"`
	// Workspace is the workspace the call acts in ("" lets the workspace
	// rules decide, as for any call).
	Workspace string    `yaml:"workspace"`
	Command   string    `yaml:"command"`
	Params    Arguments `yaml:"params"`
}

// Values of schedules.<name>.missed.
const (
	MissedSkip    = "skip"
	MissedRunOnce = "run_once"
)

// ScheduleIdentityPrefix starts the identity of every schedule.
const ScheduleIdentityPrefix = "schedule:"

// cronAccepted says what schedules.<name>.cron accepts, for errors.
const cronAccepted = `five fields, minute hour day-of-month month day-of-week, such as "0 6 * * *" or "*/15 8-18 * * 1-5", or @yearly, @monthly, @weekly, @daily, @hourly`

// cronParser reads the five standard fields and the descriptors.
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ParseCron reads a schedule's cron expression. The zone is not part of
// it (a schedule names it in time_zone), and @every is refused: its times
// depend on when the hub started, so a time could not name one run across
// restarts.
func ParseCron(expr string) (*cron.SpecSchedule, error) {
	e := strings.TrimSpace(expr)
	switch {
	case e == "":
		return nil, fmt.Errorf("is empty (accepted: %s)", cronAccepted)
	case strings.HasPrefix(e, "TZ=") || strings.HasPrefix(e, "CRON_TZ="):
		return nil, fmt.Errorf("%q names a zone: name it in time_zone instead (accepted: %s)", expr, cronAccepted)
	case strings.HasPrefix(e, "@every"):
		return nil, fmt.Errorf("%q is not accepted: @every counts from when the hub started, so its times change with every restart (accepted: %s)", expr, cronAccepted)
	}
	s, err := cronParser.Parse(e)
	if err != nil {
		return nil, fmt.Errorf("%q is not a cron expression: %v (accepted: %s)", expr, err, cronAccepted)
	}
	spec, ok := s.(*cron.SpecSchedule)
	if !ok {
		return nil, fmt.Errorf("%q is not accepted (accepted: %s)", expr, cronAccepted)
	}
	return spec, nil
}

// Location is the schedule's time zone, loaded (UTC when none is set).
func (sc Schedule) Location() (*time.Location, error) {
	if sc.TimeZone == "" {
		return time.UTC, nil
	}
	return time.LoadLocation(sc.TimeZone)
}

// ValidScheduleName checks a schedule's name: it becomes part of its
// identity and of its turn ids (schedule.<name>.<time>).
func ValidScheduleName(name string) error { return checkName("a schedule", name) }

// checkName checks a name of the configuration that becomes part of ids
// (what is "a node", "an agent", …):
// 1 to 64 lower-case letters, digits, '-' and '_', starting with a letter
// or digit.
func checkName(what, name string) error {
	ok := name != "" && len(name) <= 64
	for i := 0; i < len(name) && ok; i++ {
		c := name[i]
		ok = c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || (i > 0 && (c == '-' || c == '_'))
	}
	if !ok {
		return fmt.Errorf("%q is not %s name (accepted: 1 to 64 lower-case letters, digits, '-' and '_', starting with a letter or digit)", name, what)
	}
	return nil
}

// applyDefaults gives each schedule its identity, zone and missed policy.
func (s *Schedules) applyDefaults(*Config) {
	for name, sc := range *s {
		setDefault(&sc.Identity, ScheduleIdentityPrefix+name)
		setDefault(&sc.TimeZone, "UTC")
		setDefault(&sc.Missed, MissedSkip)
		(*s)[name] = sc
	}
}

// validate checks every schedule: its name, when it runs, its call, who
// makes it and where the result goes.
func (s *Schedules) validate(c *Config, v *validator) {
	for _, name := range sortedKeys(*s) {
		key, sc := "schedules."+name, (*s)[name]
		if err := ValidScheduleName(name); err != nil {
			v.badAt(key, "schedules", ": %v", err)
		}
		if _, err := ParseCron(sc.Cron); err != nil {
			v.bad(key+".cron", ": %v", err)
		}
		if _, err := sc.Location(); err != nil {
			v.bad(key+".time_zone", ": %q is not a time zone (accepted: an IANA zone name such as UTC, Europe/Berlin or America/New_York)", sc.TimeZone)
		}
		v.oneOf(key+".missed", sc.Missed, MissedSkip, MissedRunOnce)
		sc.Run.validate(c, v, key+".run")
		sc.validateIdentity(c, v, key)
		for i, t := range sc.Deliver {
			if _, err := chat.ParseTarget(t); err != nil {
				v.bad(item(key+".deliver", i), ": %v", err)
			}
		}
	}
}

// validate checks a schedule's call: a verb with arguments that make
// JSON, or a named command (commands.<name>) with parameters it accepts;
// a configured workspace.
func (r ScheduleRun) validate(c *Config, v *validator, key string) {
	switch {
	case r.Command != "" && (r.Verb != "" || r.Arguments != nil):
		v.bad(key+".command", ": name a verb with its arguments, or a command with its params, not both")
	case r.Command != "":
		r.validateCommand(c, v, key)
	case r.Params != nil:
		v.bad(key+".params", ": params are a named command's (accepted: command: NAME with its params, or verb: NAME with its arguments)")
	case strings.TrimSpace(r.Verb) == "":
		v.bad(key+".verb", " is empty (accepted: the verb the schedule runs, such as sys.machineInfo, with its arguments: below, or command: NAME with its params)")
	}
	if _, err := r.Arguments.JSON(); err != nil {
		v.bad(key+".arguments", ": %v (accepted: a mapping of the verb's arguments)", err)
	}
	if r.Workspace != "" {
		if _, ok := c.WorkspaceByName(r.Workspace); !ok {
			v.bad(key+".workspace", ": workspace %q is not configured (accepted: %s)", r.Workspace, strings.Join(c.WorkspaceNames(), ", "))
		}
	}
}

// validateCommand checks a schedule's named command: one the commands
// section defines, with parameters its types accept.
func (r ScheduleRun) validateCommand(c *Config, v *validator, key string) {
	cmd, ok := c.Commands[r.Command]
	if !ok {
		v.bad(key+".command", ": %q is not a command of the commands section (accepted: %s)", r.Command, strings.Join(append([]string{}, sortedKeys(c.Commands)...), ", "))
		return
	}
	params, err := r.Params.JSON()
	if err == nil {
		_, err = cmd.Values(params)
	}
	if err != nil {
		v.bad(key+".params", ": %v", err)
	}
}

// validateIdentity checks that the schedule's identity is schedule:<name>
// and holds a role.
func (sc Schedule) validateIdentity(c *Config, v *validator, key string) {
	rest, ok := strings.CutPrefix(sc.Identity, ScheduleIdentityPrefix)
	if !ok || ValidScheduleName(rest) != nil {
		v.bad(key+".identity", ": %q is not a schedule identity (accepted: schedule:<name>, lower-case letters, digits, '-' and '_')", sc.Identity)
		return
	}
	if len(c.Access.Grants[sc.Identity]) == 0 && len(c.Access.DefaultRoles) == 0 {
		v.badAt(key+".identity", key+".identity", ": %s holds no role, so it may run nothing: grant it one under access.grants, such as %q: [ops]", sc.Identity, sc.Identity)
	}
}

// Arguments are a call's arguments as written in the configuration: a
// mapping of any YAML values, sent to the verb as the JSON object they
// make.
type Arguments map[string]any

// checkYAML accepts a mapping of any values (recording the lines of its
// keys); the values are the verb's to check.
func (a *Arguments) checkYAML(d *decoder, n *yaml.Node, key string) {
	if !d.isMapping(n, key, "the verb's arguments as keys indented below this one, or {name: value, …}") {
		return
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if !d.twice(k, key, seen) {
			d.record(key, k)
		}
	}
}

// JSON is the arguments as the JSON object a verb receives ({} for none).
func (a Arguments) JSON() (json.RawMessage, error) {
	if a == nil {
		return json.RawMessage("{}"), nil
	}
	v, err := jsonValue(map[string]any(a))
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("cannot be written as JSON: %w", err)
	}
	return b, nil
}

// jsonValue turns what YAML decoded into values JSON can hold: a mapping
// whose keys are not text is refused.
func jsonValue(v any) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			j, err := jsonValue(e)
			if err != nil {
				return nil, err
			}
			out[k] = j
		}
		return out, nil
	case map[any]any:
		return nil, fmt.Errorf("a mapping has a key that is not text (%v)", reflect.ValueOf(x).MapKeys()[0])
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			j, err := jsonValue(e)
			if err != nil {
				return nil, err
			}
			out[i] = j
		}
		return out, nil
	}
	return v, nil
}
