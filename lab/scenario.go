package lab

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/a6afc2ce/hermes-hub/config"
)

// Scenario is one scenario file:
//
//	name: telegram-429-schedule          # the file's base name
//	description: Telegram answers 429 to every second sendMessage for a while.
//	hub: {send_timeout: 2s}              # hub settings (see HubSettings)
//	short: {turns: 4}                    # caps for `go test` (make test)
//	soak: {duration: 10m}                # the soak scenario only (make soak)
//	expect: {mirror_gaps: allowed_during_fault}
//	steps:
//	  - start: {}
//	  - fault: {platform: telegram, kind: "429", method: sendMessage, every: 2, count: 10, retry_after: 1}
//	  - traffic: {platform: telegram, chats: 3, turns: 10, actions: [write, exists]}
//	  - kill: {after_replies: 7}
//	  - restart: {}
//
// Steps run in order; traffic runs in the background while later steps
// inject faults or kill the hub. After the last step the runner heals every
// fault, waits for the traffic to be sent and the hub to settle, sends a
// final turn on every platform, and checks the invariants.
type Scenario struct {
	Name        string       `yaml:"name"`
	Description string       `yaml:"description"`
	Seed        int64        `yaml:"seed"`
	Hub         HubSettings  `yaml:"hub"`
	Short       Limits       `yaml:"short"`
	Soak        *Limits      `yaml:"soak"`
	Expect      Expectations `yaml:"expect"`
	Steps       []Step       `yaml:"steps"`

	path string
}

// HubSettings adjust the hub's configuration for a scenario. The lab's
// defaults: outbox backoff 100ms to 2s, send timeout 5s, 1000 attempts
// before a dead letter, Telegram pacing off.
type HubSettings struct {
	SendTimeout config.Duration `yaml:"send_timeout"`
	BackoffBase config.Duration `yaml:"backoff_base"`
	BackoffMax  config.Duration `yaml:"backoff_max"`
	MaxAttempts int             `yaml:"max_attempts"`
	// MirrorTmpfs mounts a tmpfs of this size at the state's flows
	// directory (needs root), so that fill_mirror can make it full.
	MirrorTmpfs config.Size `yaml:"mirror_tmpfs"`
	// Race overrides LAB_HUB_RACE for this scenario.
	Race *bool `yaml:"race"`
	// Docker adds the workspace box (kind docker, on the lab's workspace
	// directory) served by a private Docker daemon the scenario may stop
	// and start (docker steps; needs root: skipped otherwise).
	Docker bool `yaml:"docker"`
	// Nodes adds that many remote nodes, n1, n2, …: the hub runs an
	// embedded NATS server on a free loopback port and knows each node's
	// key (from `hub node init`); the workspace rK is kind remote on node
	// nK, and the lab's role names them. Each node is a `hub node` child
	// process the node steps start, stop and kill, serving the directory
	// nK of the lab's workspace.
	Nodes int `yaml:"nodes"`
	// CallTimeout is the hub's nats.call_timeout (default 10m).
	CallTimeout config.Duration `yaml:"call_timeout"`
	// Cluster (3, with Nodes) runs the hub's NATS as a cluster of three
	// nats-server processes instead of the embedded server, each
	// configured with `hub nats config`: the hub uses them through
	// nats.url with nats.replicas 3, the nodes connect to all three, and
	// nats steps kill, stop and start them.
	Cluster int `yaml:"cluster"`
	// Schedule adds the schedule tick: every minute, as schedule:tick,
	// proc.run appends a line to tick.log (after a second's sleep, a
	// call to kill the hub in) and echoes it; its result goes to the
	// Telegram chat scheduleChat and the local target pma/tick.jsonl;
	// missed: run_once.
	Schedule bool `yaml:"schedule"`
	// Confirm adds the named command mark (appends its marker to
	// confirm.log), which the admin role holds for confirmation: confirm
	// steps send it and press its buttons.
	Confirm bool `yaml:"confirm"`
}

// Limits cap a scenario's traffic (every traffic step's turns per chat and
// duration) and its repeat steps' rounds.
type Limits struct {
	Turns    int             `yaml:"turns"`
	Duration config.Duration `yaml:"duration"`
	Rounds   int             `yaml:"rounds"`
}

// Expectations weaken invariants a scenario breaks by design, saying so.
type Expectations struct {
	// MirrorGaps: "none" (default) or "allowed_during_fault": records that
	// fell into a fill_mirror window may be missing. The weaker property
	// checked instead: the hub kept running, nothing was lost from the
	// outbox, and a turn whose inbound record is missing did not run (no
	// side effect, no reply); Telegram and web turns are delivered again
	// and must then be mirrored and answered.
	MirrorGaps string `yaml:"mirror_gaps"`
	// DeadLetters: "none" (default) or "allowed": chunks the scenario
	// made permanently undeliverable may end as dead letters instead of
	// being received.
	DeadLetters string `yaml:"dead_letters"`
}

// Step is one step; exactly one field is set.
type Step struct {
	Start   *StartStep   `yaml:"start"`
	Restart *StartStep   `yaml:"restart"`
	Stop    *StopStep    `yaml:"stop"`
	Kill    *KillStep    `yaml:"kill"`
	Traffic *TrafficStep `yaml:"traffic"`
	Fault   *FaultStep   `yaml:"fault"`
	Heal    *HealStep    `yaml:"heal"`
	Wait    *WaitStep    `yaml:"wait"`
	Corrupt *CorruptStep `yaml:"corrupt"`
	Restore *RestoreStep `yaml:"restore"`
	Mirror  *MirrorStep  `yaml:"mirror"`
	Admin   *AdminStep   `yaml:"admin"`
	Repeat  *RepeatStep  `yaml:"repeat"`
	Docker  *DockerStep  `yaml:"docker"`
	Node    *NodeStep    `yaml:"node"`
	Confirm *ConfirmStep `yaml:"confirm"`
	NATS    *NATSStep    `yaml:"nats"`
}

// StartStep starts the hub and waits until it serves. With ExpectFailure
// the hub must instead exit with an error whose text contains every
// string listed, and leave the files under Untouched byte for byte as
// they were.
type StartStep struct {
	ExpectFailure []string `yaml:"expect_failure"`
	Untouched     []string `yaml:"untouched"`
}

// StopStep stops the hub gracefully (SIGTERM) and waits for it.
type StopStep struct{}

// KillStep kills the hub (SIGKILL unless Signal says SIGTERM) once its
// trigger fires: after AfterReplies more chunks reached the platforms,
// during a long verb (a "long" turn has started and not been answered),
// after a fixed delay, after a random delay from the scenario's seeded
// generator, or at NearMinute from the next whole minute of the clock
// (negative: before it), where a schedule of hub.schedule runs. No
// trigger kills at once.
type KillStep struct {
	Signal       string           `yaml:"signal"`
	AfterReplies int              `yaml:"after_replies"`
	During       string           `yaml:"during"`
	After        config.Duration  `yaml:"after"`
	Random       *Range           `yaml:"random"`
	NearMinute   *config.Duration `yaml:"near_minute"`
}

// Range is a duration range for random choices.
type Range struct {
	Min config.Duration `yaml:"min"`
	Max config.Duration `yaml:"max"`
}

// TrafficStep sends turns in the background: Turns per chat (or for
// Duration), each one an action picked in turn from Actions (or at random
// with Shuffle), Interval apart in a chat. Platform telegram: chats are
// supergroups; discord: Via "interaction" (slash commands, the default) or
// "message" (prefixed channel messages); web: one panel client sending
// sequentially. Duplicate is the share of turns whose inbound is delivered
// twice (at once or a little later). Stranger sends as an identity with no
// grant.
type TrafficStep struct {
	Platform  string          `yaml:"platform"`
	Via       string          `yaml:"via"`
	Chats     int             `yaml:"chats"`
	Turns     int             `yaml:"turns"`
	Duration  config.Duration `yaml:"duration"`
	Interval  config.Duration `yaml:"interval"`
	Actions   []string        `yaml:"actions"`
	Shuffle   bool            `yaml:"shuffle"`
	Duplicate float64         `yaml:"duplicate"`
	Stranger  bool            `yaml:"stranger"`
	// Wait makes the step run in the foreground: the next step starts
	// once every turn has been sent.
	Wait bool `yaml:"wait"`
	// Node sends the remote actions to that node's workspace; without it
	// they go to the nodes in turn.
	Node string `yaml:"node"`
}

// FaultStep injects a fault into a fake platform.
//
//   - kind "429": Telegram answers 429 with RetryAfter (seconds); Discord
//     answers its rate-limit 429 with RetryAfter.
//   - kind "5xx": Status (default 502) answers.
//   - kind "slow": answers come Delay late (shorter than the send timeout).
//   - kind "hang": no answer until the hub's send timeout gives up.
//   - kind "drop": the connection closes without an answer.
//   - kind "down": the platform is gone (Mode "refused", the default, or
//     "unavailable" for 503) until a heal step, or for Duration.
//   - kind "duplicate_updates": Telegram repeats its next Count answers.
//
// Every and Count schedule the faulted calls (every Every-th matching
// call, Count times; Count 0 until healed). Method is the Telegram method
// (default sendMessage); Path the Discord path prefix (default
// /webhooks/ and /channels/, the reply paths).
type FaultStep struct {
	Platform   string          `yaml:"platform"`
	Kind       string          `yaml:"kind"`
	Method     string          `yaml:"method"`
	Path       string          `yaml:"path"`
	Every      int             `yaml:"every"`
	Count      int             `yaml:"count"`
	RetryAfter float64         `yaml:"retry_after"`
	Status     int             `yaml:"status"`
	Delay      config.Duration `yaml:"delay"`
	Mode       string          `yaml:"mode"`
	Duration   config.Duration `yaml:"duration"`
}

// HealStep removes a platform's faults ("all" for every platform) and
// brings it back up.
type HealStep struct {
	Platform string `yaml:"platform"`
}

// WaitStep waits: For a fixed time, until Replies more chunks reached the
// platforms, until every traffic step has sent its turns (Traffic), or
// until the hub is quiet (Quiet: nothing pending and nothing delivered for
// that long).
type WaitStep struct {
	For     config.Duration `yaml:"for"`
	Replies int             `yaml:"replies"`
	Traffic bool            `yaml:"traffic"`
	Quiet   config.Duration `yaml:"quiet"`
}

// CorruptStep damages a state file while the hub is stopped: Content
// replaces it, Truncate cuts it to that many bytes. Restore puts it back.
type CorruptStep struct {
	File     string  `yaml:"file"`
	Content  *string `yaml:"content"`
	Truncate *int64  `yaml:"truncate"`
}

// RestoreStep puts back every file a corrupt step changed.
type RestoreStep struct{}

// MirrorStep fills the mirror tmpfs (Fill) so that every write fails, or
// frees it again (Free).
type MirrorStep struct {
	Fill bool `yaml:"fill"`
	Free bool `yaml:"free"`
}

// AdminStep makes one request to the running hub's admin API and checks
// the answer: "GET /api/channels" answered with Status, its body containing
// every string of Contains. Body is the JSON body of a POST ({} when
// empty). Via is "socket" (the admin socket, the default) or "web" (the
// web panel's API, with the bearer token).
type AdminStep struct {
	Request  string   `yaml:"request"`
	Via      string   `yaml:"via"`
	Body     string   `yaml:"body"`
	Status   int      `yaml:"status"`
	Contains []string `yaml:"contains"`
}

// DockerStep stops (Stop) or starts (Start) the private Docker daemon of
// a scenario with hub.docker. With During "box" the stop waits until a box
// turn is running in its container (its marker is in box.log, no answer
// yet; a box-long turn). Answer then lists what the answer of that turn must contain: it
// must reach its chat exactly once, and the turn must not have finished.
// Every box turn sent after the last start must be answered with its
// marker (it ran).
type DockerStep struct {
	Stop   bool     `yaml:"stop"`
	Start  bool     `yaml:"start"`
	During string   `yaml:"during"`
	Answer []string `yaml:"answer"`
}

// NodeStep acts on the `hub node` Name of a scenario with hub.nodes:
// Action start, stop (SIGTERM), kill (SIGKILL) or restart (SIGKILL, then
// start). With During "long" a stop, kill or restart waits until a
// remote-long turn runs on that node (its marker is in the node's
// remote.log, no answer yet); Answer then lists what that turn's answer
// must carry: it must reach its chat exactly once. On start, Queued says
// what becomes of the calls sent to the node while it was down: "ran"
// (they waited, and each ran once when it came back), or "offline" (the
// start waits until each was answered that the node is offline, then the
// node refuses each as expired: none runs).
type NodeStep struct {
	Name   string   `yaml:"name"`
	Action string   `yaml:"action"`
	During string   `yaml:"during"`
	Answer []string `yaml:"answer"`
	Queued string   `yaml:"queued"`
}

// NATSStep acts on the servers of a scenario with hub.cluster: Server is
// s1, s2, s3, "leader" (the server leading node n1's queue, the stream
// HUB_NODE_n1), "follower" (one that does not) or "all"; Action kill
// (SIGKILL), stop (SIGTERM), start (the named servers that are down; all:
// every one) or restart (SIGKILL, then start once each is current again).
// With During "remote" a kill, stop or restart waits until a remote-long
// turn runs on a node. After a step that stops or kills the leader or
// every server, the lab measures the failover: how long until the first
// remote turn sent after it is answered.
type NATSStep struct {
	Server string `yaml:"server"`
	Action string `yaml:"action"`
	During string `yaml:"during"`
}

// RepeatStep runs Steps Times times or, without Times, round after round
// until every traffic step has sent its turns (at least once).
type RepeatStep struct {
	Times int    `yaml:"times"`
	Steps []Step `yaml:"steps"`
}

// Actions a traffic step may use.
var knownActions = map[string]string{
	"write":        "appends its marker to ran.log with proc.run and echoes it (side effect, unique reply)",
	"insert":       "inserts its marker at the top of its chat's log file with fs.writeRange (side effect)",
	"exists":       "asks fs.exists about a file named after its marker (read-only, unique reply)",
	"big":          "reads big.txt, whose reply takes several chunks",
	"long":         "appends its marker to long.log, sleeps 1.5 s, echoes it (a verb to kill the hub in)",
	"whoami":       "the /whoami built-in",
	"box":          "appends its marker to box.log and echoes it with proc.run in the docker workspace box (telegram; hub.docker)",
	"box-long":     "as box, sleeping 120 s before the echo: a call for a docker stop step to cut short",
	"remote-write": "appends its marker to remote.log and echoes it with proc.run in a remote workspace rK, on node nK (telegram; hub.nodes)",
	"remote-long":  "as remote-write, sleeping 4 s before the echo: a call to stop or kill a node, or the hub, in",
	"upload":       "sends a file with its message, saved at up/<marker>.bin (a document, an attachment, /fs upload, a multipart panel message)",
	"getfile":      "asks for blob.bin back as a file with /get (fs.send): a document, an attachment, a panel download",
}

// LoadScenario reads and checks a scenario file.
func LoadScenario(path string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	sc, err := ParseScenario(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if base := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)); sc.Name != base {
		return nil, fmt.Errorf("%s: name %q is not the file's base name %q", path, sc.Name, base)
	}
	sc.path = path
	return sc, nil
}

// ParseScenario decodes a scenario strictly (unknown keys are errors) and
// checks it.
func ParseScenario(data []byte) (*Scenario, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var sc Scenario
	if err := dec.Decode(&sc); err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	if err := sc.validate(); err != nil {
		return nil, fmt.Errorf("scenario %q: %w", sc.Name, err)
	}
	return &sc, nil
}

func (sc *Scenario) validate() error {
	if sc.Name == "" {
		return errors.New("name is empty")
	}
	if sc.Description == "" {
		return errors.New("description is empty: say what the scenario shows")
	}
	switch sc.Expect.MirrorGaps {
	case "", "none", "allowed_during_fault":
	default:
		return fmt.Errorf("expect.mirror_gaps %q is not accepted (accepted: none, allowed_during_fault)", sc.Expect.MirrorGaps)
	}
	switch sc.Expect.DeadLetters {
	case "", "none", "allowed":
	default:
		return fmt.Errorf("expect.dead_letters %q is not accepted (accepted: none, allowed)", sc.Expect.DeadLetters)
	}
	if len(sc.Steps) == 0 {
		return errors.New("no steps")
	}
	if sc.Steps[0].Start == nil {
		return errors.New("the first step must be start")
	}
	if err := sc.validateNodes(); err != nil {
		return err
	}
	return validateSteps(sc.Steps, "steps", sc)
}

func validateSteps(steps []Step, where string, sc *Scenario) error {
	for i, st := range steps {
		at := fmt.Sprintf("%s[%d]", where, i)
		if err := st.validate(sc); err != nil {
			return fmt.Errorf("%s: %w", at, err)
		}
		if st.Repeat != nil {
			if err := validateSteps(st.Repeat.Steps, at+".repeat.steps", sc); err != nil {
				return err
			}
		}
	}
	return nil
}

// kind names the step's one field.
func (st Step) kind() (string, error) {
	var set []string
	for name, ok := range map[string]bool{
		"start": st.Start != nil, "restart": st.Restart != nil, "stop": st.Stop != nil, "kill": st.Kill != nil,
		"traffic": st.Traffic != nil, "fault": st.Fault != nil, "heal": st.Heal != nil, "wait": st.Wait != nil,
		"corrupt": st.Corrupt != nil, "restore": st.Restore != nil, "mirror": st.Mirror != nil, "admin": st.Admin != nil,
		"repeat": st.Repeat != nil, "docker": st.Docker != nil, "node": st.Node != nil, "confirm": st.Confirm != nil,
		"nats": st.NATS != nil,
	} {
		if ok {
			set = append(set, name)
		}
	}
	if len(set) != 1 {
		return "", fmt.Errorf("a step has exactly one of start, restart, stop, kill, traffic, fault, heal, wait, corrupt, restore, mirror, admin, repeat, docker, node, confirm, nats (got %v)", set)
	}
	return set[0], nil
}

func (st Step) validate(sc *Scenario) error {
	kind, err := st.kind()
	if err != nil {
		return err
	}
	switch kind {
	case "confirm":
		switch c := st.Confirm; {
		case !sc.Hub.Confirm:
			return errors.New("confirm needs hub.confirm: true")
		case c.Calls < 0 || c.Cancel < 0 || c.Calls+c.Cancel == 0:
			return fmt.Errorf("confirm: calls and cancel are counts, at least one of them above 0 (got %d and %d)", c.Calls, c.Cancel)
		}
	case "kill":
		k := st.Kill
		switch k.Signal {
		case "", "SIGKILL", "SIGTERM":
		default:
			return fmt.Errorf("kill.signal %q is not accepted (accepted: SIGKILL, SIGTERM)", k.Signal)
		}
		if k.During != "" && k.During != "long" && k.During != "remote" {
			return fmt.Errorf("kill.during %q is not accepted (accepted: long, remote)", k.During)
		}
		if k.During == "remote" && sc.Hub.Nodes == 0 {
			return errors.New("kill.during remote needs hub.nodes")
		}
		if r := k.Random; r != nil && (r.Min.D() < 0 || r.Max.D() < r.Min.D()) {
			return fmt.Errorf("kill.random: want 0 <= min <= max, got %s and %s", r.Min, r.Max)
		}
		if m := k.NearMinute; m != nil && (m.D() <= -30*time.Second || m.D() >= 30*time.Second) {
			return fmt.Errorf("kill.near_minute %s is not accepted (accepted: an offset from the next whole minute between -30s and 30s)", *m)
		}
	case "traffic":
		if (slices.Contains(st.Traffic.Actions, "box") || slices.Contains(st.Traffic.Actions, "box-long")) && (!sc.Hub.Docker || st.Traffic.Platform != "telegram") {
			return errors.New("actions box and box-long need hub.docker and platform telegram")
		}
		if err := st.Traffic.validateRemote(sc); err != nil {
			return err
		}
		return st.Traffic.validate()
	case "node":
		return st.Node.validate(sc)
	case "nats":
		return st.NATS.validate(sc)
	case "docker":
		d := st.Docker
		switch {
		case !sc.Hub.Docker:
			return errors.New("a docker step needs hub.docker")
		case d.Stop == d.Start:
			return errors.New("docker needs exactly one of stop: true, start: true")
		case d.During != "" && (d.During != "box" || !d.Stop):
			return fmt.Errorf("docker.during %q is not accepted (accepted: box, with stop)", d.During)
		case len(d.Answer) > 0 && d.During == "":
			return errors.New("docker.answer needs during: box")
		}
	case "fault":
		return st.Fault.validate()
	case "heal":
		switch st.Heal.Platform {
		case "telegram", "discord", "all":
		default:
			return fmt.Errorf("heal.platform %q is not accepted (accepted: telegram, discord, all)", st.Heal.Platform)
		}
	case "wait":
		w := st.Wait
		n := 0
		for _, set := range []bool{w.For > 0, w.Replies > 0, w.Traffic, w.Quiet > 0} {
			if set {
				n++
			}
		}
		if n != 1 {
			return errors.New("wait needs exactly one of for, replies, traffic, quiet")
		}
	case "corrupt":
		c := st.Corrupt
		if c.File == "" || filepath.IsAbs(c.File) || strings.Contains(c.File, "..") {
			return fmt.Errorf("corrupt.file %q must be a path inside the state directory, such as pma/delivery_targets.json", c.File)
		}
		if (c.Content == nil) == (c.Truncate == nil) {
			return errors.New("corrupt needs exactly one of content, truncate")
		}
	case "mirror":
		if st.Mirror.Fill == st.Mirror.Free {
			return errors.New("mirror needs exactly one of fill: true, free: true")
		}
		if sc.Hub.MirrorTmpfs <= 0 {
			return errors.New("a mirror step needs hub.mirror_tmpfs")
		}
	case "admin":
		a := st.Admin
		method, path, ok := strings.Cut(a.Request, " ")
		if !ok || (method != "GET" && method != "POST") || !strings.HasPrefix(path, "/api/") {
			return fmt.Errorf("admin.request %q is not \"GET /api/…\" or \"POST /api/…\"", a.Request)
		}
		if a.Status == 0 {
			return errors.New("admin.status is required")
		}
		if a.Via != "" && a.Via != "socket" && a.Via != "web" {
			return fmt.Errorf("admin.via %q is not accepted (accepted: socket, web)", a.Via)
		}
	case "repeat":
		if len(st.Repeat.Steps) == 0 {
			return errors.New("repeat has no steps")
		}
		for _, s := range st.Repeat.Steps {
			if s.Repeat != nil {
				return errors.New("repeat steps cannot nest")
			}
		}
	}
	return nil
}

func (t *TrafficStep) validate() error {
	switch t.Platform {
	case "telegram", "web":
		if t.Via != "" {
			return fmt.Errorf("traffic.via applies to discord only")
		}
	case "discord":
		switch t.Via {
		case "", "interaction", "message":
		default:
			return fmt.Errorf("traffic.via %q is not accepted (accepted: interaction, message)", t.Via)
		}
	default:
		return fmt.Errorf("traffic.platform %q is not accepted (accepted: telegram, discord, web)", t.Platform)
	}
	if (t.Turns > 0) == (t.Duration > 0) {
		return errors.New("traffic needs exactly one of turns, duration")
	}
	if t.Platform == "web" && t.Chats > 1 {
		return errors.New("web traffic has one chat (the panel)")
	}
	if t.Duplicate < 0 || t.Duplicate > 1 {
		return fmt.Errorf("traffic.duplicate %v is not a share between 0 and 1", t.Duplicate)
	}
	if len(t.Actions) == 0 {
		return errors.New("traffic.actions is empty")
	}
	for _, a := range t.Actions {
		if _, ok := knownActions[a]; !ok {
			return fmt.Errorf("traffic action %q is not accepted (accepted: %s)", a, strings.Join(sortedKeys(knownActions), ", "))
		}
		if a == "insert" && t.Platform == "discord" && t.Via != "message" {
			// Interactions of one channel run concurrently; two inserts into
			// the same file would race (fs.writeRange rewrites the file).
			return errors.New("action insert needs an ordered source: not discord interactions")
		}
	}
	return nil
}

func (f *FaultStep) validate() error {
	switch f.Platform {
	case "telegram", "discord":
	default:
		return fmt.Errorf("fault.platform %q is not accepted (accepted: telegram, discord)", f.Platform)
	}
	switch f.Kind {
	case "429":
		if f.RetryAfter <= 0 {
			return errors.New("a 429 fault needs retry_after (seconds)")
		}
	case "5xx":
		if f.Status != 0 && (f.Status < 500 || f.Status > 599) {
			return fmt.Errorf("fault.status %d is not a 5xx status", f.Status)
		}
	case "slow":
		if f.Delay <= 0 {
			return errors.New("a slow fault needs delay")
		}
	case "hang", "drop":
	case "down":
		switch f.Mode {
		case "", "refused", "unavailable":
		default:
			return fmt.Errorf("fault.mode %q is not accepted (accepted: refused, unavailable)", f.Mode)
		}
	case "duplicate_updates":
		if f.Platform != "telegram" || f.Count <= 0 {
			return errors.New("duplicate_updates is a telegram fault with a count")
		}
	default:
		return fmt.Errorf("fault.kind %q is not accepted (accepted: 429, 5xx, slow, hang, drop, down, duplicate_updates)", f.Kind)
	}
	if f.Every < 0 || f.Count < 0 {
		return errors.New("fault.every and fault.count cannot be negative")
	}
	if f.Platform == "telegram" && f.Path != "" {
		return errors.New("fault.path applies to discord; telegram faults name a method")
	}
	if f.Platform == "discord" && f.Method != "" {
		return errors.New("fault.method applies to telegram; discord faults name a path")
	}
	return nil
}

// limited returns the traffic step with the caps applied.
func (t TrafficStep) limited(l Limits) TrafficStep {
	if l.Turns > 0 && t.Turns > l.Turns {
		t.Turns = l.Turns
	}
	if l.Duration > 0 && t.Duration > 0 {
		t.Duration = l.Duration
	}
	return t
}

func sortedKeys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }

// durationOr returns d, or def when d is zero.
func durationOr(d config.Duration, def time.Duration) time.Duration {
	if d > 0 {
		return d.D()
	}
	return def
}
