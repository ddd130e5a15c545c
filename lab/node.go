package lab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/a6afc2ce/hermes-hub/internal/testkit"
	"github.com/a6afc2ce/hermes-hub/outbox"
)

// Remote nodes in the lab (hub.nodes): node nK is a `hub node` child
// process serving the directory nK of the lab's workspace as its
// workspace "lab"; the hub's workspace rK is kind remote on it.

// remoteFile is the file of a node's workspace its remote actions append
// their markers to.
const remoteFile = "remote.log"

// Answers the checks look for.
const (
	answerOffline     = "offline"
	answerUnsure      = "may or may not have completed"
	expiredLogLine    = "expired request not run"
	maxNodes          = 9
	nodeStartDeadline = 60 * time.Second
)

// labNodes are a world's remote nodes.
type labNodes struct {
	port  int // the embedded NATS server's
	procs map[string]*hubProc
	keys  map[string]string // node → public nkey

	mu     sync.Mutex
	next   int                    // round-robin of remote actions
	down   map[string]bool        // nodes stopped or killed and not started since
	turns  map[string]*remoteTurn // by turn id
	cuts   []nodeCut
	queued []queuedCheck
	kills  int
	// triggered are the markers a kill trigger has seen running.
	triggered map[string]bool
}

// remoteTurn is a turn of a remote action: where its marker goes and
// whether its node was down when it was sent.
type remoteTurn struct {
	turn *Turn
	node string
	down bool
}

// nodeCut is a turn a node step stopped or killed its node under.
type nodeCut struct {
	turn   *Turn
	answer []string
}

// queuedCheck is what must have become of the calls sent to a node while
// it was down: "ran" or "offline".
type queuedCheck struct {
	node  string
	turns []*Turn
	want  string
}

func nodeName(k int) string        { return "n" + strconv.Itoa(k) }
func remoteWorkspace(k int) string { return "r" + strconv.Itoa(k) }

func (sc *Scenario) validateNodes() error {
	h := sc.Hub
	if h.Nodes < 0 || h.Nodes > maxNodes {
		return fmt.Errorf("hub.nodes %d is out of range (accepted: 0 to %d)", h.Nodes, maxNodes)
	}
	if h.CallTimeout != 0 && (h.Nodes == 0 || h.CallTimeout.D() < time.Second) {
		return errors.New("hub.call_timeout needs hub.nodes and at least 1s")
	}
	if h.Cluster != 0 && (h.Cluster != clusterSize || h.Nodes == 0) {
		return fmt.Errorf("hub.cluster %d is not accepted (accepted: %d, with hub.nodes)", h.Cluster, clusterSize)
	}
	return nil
}

func (t *TrafficStep) validateRemote(sc *Scenario) error {
	remote := slices.Contains(t.Actions, "remote-write") || slices.Contains(t.Actions, "remote-long")
	switch {
	case remote && (sc.Hub.Nodes == 0 || t.Platform != "telegram"):
		return errors.New("actions remote-write and remote-long need hub.nodes and platform telegram")
	case t.Node != "" && !remote:
		return errors.New("traffic.node applies to the remote actions")
	case t.Node != "" && !sc.hasNode(t.Node):
		return fmt.Errorf("traffic.node %q is not one of the scenario's nodes (n1 to n%d)", t.Node, sc.Hub.Nodes)
	}
	return nil
}

func (sc *Scenario) hasNode(name string) bool {
	for k := 1; k <= sc.Hub.Nodes; k++ {
		if nodeName(k) == name {
			return true
		}
	}
	return false
}

func (n *NodeStep) validate(sc *Scenario) error {
	switch {
	case sc.Hub.Nodes == 0:
		return errors.New("a node step needs hub.nodes")
	case !sc.hasNode(n.Name):
		return fmt.Errorf("node.name %q is not one of the scenario's nodes (n1 to n%d)", n.Name, sc.Hub.Nodes)
	}
	switch n.Action {
	case "start", "stop", "kill", "restart":
	default:
		return fmt.Errorf("node.action %q is not accepted (accepted: start, stop, kill, restart)", n.Action)
	}
	switch {
	case n.During != "" && (n.During != "long" || n.Action == "start"):
		return fmt.Errorf("node.during %q is not accepted (accepted: long, with stop, kill or restart)", n.During)
	case len(n.Answer) > 0 && n.During == "":
		return errors.New("node.answer needs during: long")
	case n.Queued != "" && n.Queued != "ran" && n.Queued != answerOffline:
		return fmt.Errorf("node.queued %q is not accepted (accepted: ran, offline)", n.Queued)
	case n.Queued != "" && n.Action != "start":
		return errors.New("node.queued applies to start")
	}
	return nil
}

// setupNodes writes each node's seed (`hub node init`) and configuration.
func (w *world) setupNodes() error {
	count := w.sc.Hub.Nodes
	if count == 0 {
		return nil
	}
	port, err := testkit.FreePort()
	if err != nil {
		return err
	}
	ln := &labNodes{port: port, procs: map[string]*hubProc{}, keys: map[string]string{}, down: map[string]bool{}, turns: map[string]*remoteTurn{}, triggered: map[string]bool{}}
	w.nodes = ln
	for k := 1; k <= count; k++ {
		name := nodeName(k)
		seed := filepath.Join(w.dir, name+".nk")
		out, err := exec.CommandContext(w.ctx, w.opt.HubBinary, "node", "init", "--name", name, "--seed", seed).CombinedOutput()
		if err != nil {
			return fmt.Errorf("hub node init %s: %v: %s", name, err, out)
		}
		_, pub, ok := strings.Cut(string(out), "nkey: ")
		if !ok {
			return fmt.Errorf("hub node init %s printed no nkey: %s", name, out)
		}
		ln.keys[name] = strings.TrimSpace(pub)
		dir := filepath.Join(w.ws, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, remoteFile), nil, 0o644); err != nil {
			return err
		}
		cfg := filepath.Join(w.dir, name+".yml")
		data := fmt.Sprintf("node:\n  name: %s\n  nats_url: %q\n  nkey_file: %q\n  heartbeat: 1s\nstate_dir: %q\nworkspaces:\n  lab:\n    path: %q\n",
			name, w.natsURL(), seed, filepath.Join(w.dir, name+"-state"), dir)
		if err := os.WriteFile(cfg, []byte(data), 0o600); err != nil {
			return err
		}
		ln.procs[name] = &hubProc{bin: w.opt.HubBinary, config: cfg, logDir: w.dir, node: name}
		ln.down[name] = true // until a node step starts it
	}
	w.nodes = ln
	return nil
}

// nodesConfig is the hub's nats and nodes sections.
func (w *world) nodesConfig() string {
	if w.nodes == nil {
		return ""
	}
	var b strings.Builder
	if w.cluster != nil {
		fmt.Fprintf(&b, "nats:\n  url: %q\n  replicas: %d\n", w.natsURL(), len(w.cluster.c.Servers))
	} else {
		fmt.Fprintf(&b, "nats:\n  embedded: true\n  listen: 127.0.0.1:%d\n", w.nodes.port)
	}
	if ct := w.sc.Hub.CallTimeout; ct > 0 {
		fmt.Fprintf(&b, "  call_timeout: %s\n", ct.D())
	}
	b.WriteString("nodes:\n")
	for k := 1; k <= w.sc.Hub.Nodes; k++ {
		fmt.Fprintf(&b, "  %s:\n    nkey: %s\n", nodeName(k), w.nodes.keys[nodeName(k)])
	}
	return b.String()
}

// remoteWorkspacesConfig is the entries of the remote workspaces, under
// workspaces:.
func (w *world) remoteWorkspacesConfig() string {
	var b strings.Builder
	for k := 1; k <= w.sc.Hub.Nodes; k++ {
		fmt.Fprintf(&b, "  %s:\n    destination: {kind: remote, node: %s, workspace: lab}\n", remoteWorkspace(k), nodeName(k))
	}
	return b.String()
}

// adminWorkspaces is the lab role's workspaces: every one, or with remote
// nodes each one by name (a remote workspace is open only to a role that
// names it).
func (w *world) adminWorkspaces() string {
	if w.sc.Hub.Nodes == 0 {
		return `["*"]`
	}
	names := []string{"default"}
	if w.sc.Hub.Docker {
		names = append(names, "box")
	}
	for k := 1; k <= w.sc.Hub.Nodes; k++ {
		names = append(names, remoteWorkspace(k))
	}
	return "[" + strings.Join(names, ", ") + "]"
}

// remoteCommand is a remote action's envelope for turn t: proc.run in the
// remote workspace of node (or of the next node in turn).
func (w *world) remoteCommand(action string, t *Turn, node string) command {
	ln := w.nodes
	ln.mu.Lock()
	if node == "" {
		ln.next++
		node = nodeName((ln.next-1)%w.sc.Hub.Nodes + 1)
	}
	ln.turns[t.TurnID] = &remoteTurn{turn: t, node: node, down: ln.down[node]}
	ln.mu.Unlock()
	sleep := 0
	if action == "remote-long" {
		sleep = 4
	}
	ws := "r" + strings.TrimPrefix(node, "n")
	env := fmt.Sprintf(`{"verb":"proc.run","arguments":{"executable":"sh","arguments":["-c","echo %s >> %s; sleep %d; echo %s"]},"workspace":%q}`,
		t.Marker, remoteFile, sleep, t.Marker, ws)
	return command{text: env, raw: true}
}

func isRemote(action string) bool { return action == "remote-write" || action == "remote-long" }

// node runs a node step.
func (w *world) node(s NodeStep) error {
	ln := w.nodes
	p := ln.procs[s.Name]
	if s.Action == "start" {
		return w.startNode(s)
	}
	var cut *Turn
	if s.During == "long" {
		ctx, cancel := context.WithTimeout(w.ctx, 3*time.Minute)
		defer cancel()
		if err := w.until(ctx, "a remote-long turn running on "+s.Name, func() bool {
			cut = w.runningOn(s.Name)
			return cut != nil
		}); err != nil {
			return err
		}
		w.markTriggered()
	}
	r := p.current()
	if r == nil || r.exited() {
		return fmt.Errorf("node %s is not running", s.Name)
	}
	ln.mu.Lock()
	ln.down[s.Name] = true
	if cut != nil && len(s.Answer) > 0 {
		ln.cuts = append(ln.cuts, nodeCut{turn: cut, answer: s.Answer})
	}
	ln.mu.Unlock()
	if s.Action == "stop" {
		if err := r.stop(20 * time.Second); err != nil {
			return fmt.Errorf("node %s did not stop cleanly: %v\n%s", s.Name, err, tail(r.log, 30))
		}
		w.logf("node %s stopped", s.Name)
		return nil
	}
	r.kill()
	ln.mu.Lock()
	ln.kills++
	ln.mu.Unlock()
	w.logf("node %s killed with SIGKILL", s.Name)
	if s.Action == "restart" {
		return w.startNode(NodeStep{Name: s.Name, Action: "start"})
	}
	return nil
}

// startNode starts a node; with Queued it first waits for the calls sent
// while the node was down to be answered (offline) or, after the start,
// checks what became of them.
func (w *world) startNode(s NodeStep) error {
	ln := w.nodes
	var queued []*Turn
	ln.mu.Lock()
	for _, rt := range ln.turns {
		if rt.node == s.Name && rt.down {
			queued = append(queued, rt.turn)
		}
	}
	ln.mu.Unlock()
	if s.Queued == answerOffline {
		if err := w.waitAnswered(queued); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(w.ctx, nodeStartDeadline)
	defer cancel()
	r, err := ln.procs[s.Name].start(ctx)
	if err != nil {
		return fmt.Errorf("node %s: %w", s.Name, err)
	}
	ln.mu.Lock()
	ln.down[s.Name] = false
	for _, rt := range ln.turns {
		if rt.node == s.Name {
			rt.down = false
		}
	}
	if s.Queued != "" {
		ln.queued = append(ln.queued, queuedCheck{node: s.Name, turns: queued, want: s.Queued})
	}
	ln.mu.Unlock()
	w.logf("node %s run %d ready (pid %d)", s.Name, r.n, r.pid())
	if s.Queued != answerOffline {
		return nil
	}
	// Each call reaches the node, which refuses it as expired.
	return w.until(ctx, fmt.Sprintf("node %s to refuse %d expired calls", s.Name, len(queued)), func() bool {
		data, _ := os.ReadFile(r.log)
		for _, t := range queued {
			if !expiredIn(string(data), t.TurnID) {
				return false
			}
		}
		return true
	})
}

// expiredIn reports whether a node's log says it refused turn's call as
// expired.
func expiredIn(log, turn string) bool {
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, expiredLogLine) && strings.Contains(l, "call="+turn+"#") {
			return true
		}
	}
	return false
}

// waitAnswered waits until every turn has a delivered answer.
func (w *world) waitAnswered(turns []*Turn) error {
	ctx, cancel := context.WithTimeout(w.ctx, 3*time.Minute)
	defer cancel()
	return w.until(ctx, fmt.Sprintf("answers to the %d calls queued for a stopped node", len(turns)), func() bool {
		st, err := w.readOutbox(ctx)
		if err != nil {
			return false
		}
		got := map[string]bool{}
		for _, e := range st.delivered {
			got[e.TurnID] = true
		}
		for _, t := range turns {
			if !got[t.TurnID] {
				return false
			}
		}
		return true
	})
}

// runningOn returns a remote-long turn that has started on node (its
// marker is in the node's remote.log), that no earlier trigger saw, and
// that has no answer carrying its marker yet; or nil.
func (w *world) runningOn(node string) *Turn {
	data, _ := os.ReadFile(filepath.Join(w.ws, node, remoteFile))
	started := map[string]bool{}
	for _, l := range strings.Split(string(data), "\n") {
		started[strings.TrimSpace(l)] = true
	}
	ln := w.nodes
	ln.mu.Lock()
	var cands []*Turn
	for _, rt := range ln.turns {
		if rt.node == node && rt.turn.Action == "remote-long" && started[rt.turn.Marker] && !ln.triggered[rt.turn.Marker] {
			cands = append(cands, rt.turn)
		}
	}
	ln.mu.Unlock()
	for _, t := range cands {
		if !w.answeredByFake(t) {
			return t
		}
	}
	return nil
}

// remoteRunning reports whether a remote-long turn runs on any node that
// no earlier trigger saw: a call the current hub run made, not one that
// still runs on its node after the hub that made it was killed. The
// markers running now are then seen.
func (w *world) remoteRunning() bool {
	for k := 1; k <= w.sc.Hub.Nodes; k++ {
		if w.runningOn(nodeName(k)) != nil {
			w.markTriggered()
			return true
		}
	}
	return false
}

// markTriggered records every marker in the nodes' files as seen by a
// trigger.
func (w *world) markTriggered() {
	ln := w.nodes
	ln.mu.Lock()
	defer ln.mu.Unlock()
	for k := 1; k <= w.sc.Hub.Nodes; k++ {
		data, _ := os.ReadFile(filepath.Join(w.ws, nodeName(k), remoteFile))
		for _, l := range strings.Split(string(data), "\n") {
			if l = strings.TrimSpace(l); l != "" {
				ln.triggered[l] = true
			}
		}
	}
}

// healNodes starts every node that is down, so that the calls waiting
// for them end before the hub settles.
func (w *world) healNodes() error {
	if w.nodes == nil {
		return nil
	}
	for k := 1; k <= w.sc.Hub.Nodes; k++ {
		name := nodeName(k)
		w.nodes.mu.Lock()
		down := w.nodes.down[name]
		w.nodes.mu.Unlock()
		if down {
			if err := w.startNode(NodeStep{Name: name, Action: "start"}); err != nil {
				return err
			}
		}
	}
	return nil
}

// stopNodes ends every node process (the world's end).
func (w *world) stopNodes() {
	if w.nodes == nil {
		return
	}
	for _, p := range w.nodes.procs {
		if r := p.current(); r != nil && !r.exited() {
			if err := r.stop(20 * time.Second); err != nil {
				w.logf("node %s: %v", p.node, err)
			}
		}
	}
}

// checkNodes checks the remote turns against what the nodes' workspaces
// hold and what the hub answered:
//   - at most once: a turn's marker is in its node's remote.log at most
//     once, exactly once when its answer carries the marker (the command
//     ran to the end), never when the turn did not reach the hub;
//   - a turn a node step cut is answered with what the step says;
//   - calls sent to a stopped node ran once when it came back ("ran"), or
//     were answered offline and never ran ("offline");
//   - with no hub and node faults, every remote turn ran;
//   - no node run panicked or reported a data race.
func (w *world) checkNodes(o Observation) []Violation {
	ln := w.nodes
	if ln == nil {
		return nil
	}
	var v []Violation
	fail := func(format string, args ...any) {
		v = append(v, Violation{Invariant: "nodes", Detail: fmt.Sprintf(format, args...)})
	}
	answers := map[string][]outbox.Entry{}
	for _, e := range slices.Concat(o.Delivered, o.Dead) {
		answers[e.TurnID] = append(answers[e.TurnID], e)
	}
	// What Telegram received, by chat and message id: the outbox records
	// the platform's id of each chunk it delivered.
	received := map[string]string{}
	for _, m := range o.Telegram {
		received[m.ChatID+"/"+strconv.FormatInt(m.MessageID, 10)] = m.Text
	}
	text := func(t *Turn) string {
		var b strings.Builder
		es := answers[t.TurnID]
		slices.SortFunc(es, func(a, b outbox.Entry) int { return a.Index - b.Index })
		for _, e := range es {
			chat := strings.TrimPrefix(e.Target.String(), "chat:telegram:")
			b.WriteString(received[chat+"/"+e.PlatformMessageID])
		}
		return b.String()
	}
	files := map[string]string{}
	for k := 1; k <= w.sc.Hub.Nodes; k++ {
		data, _ := os.ReadFile(filepath.Join(w.ws, nodeName(k), remoteFile))
		files[nodeName(k)] = string(data)
	}
	count := func(rt *remoteTurn) int {
		n := 0
		for _, l := range strings.Split(files[rt.node], "\n") {
			if strings.TrimSpace(l) == rt.turn.Marker {
				n++
			}
		}
		return n
	}
	ln.mu.Lock()
	defer ln.mu.Unlock()
	w.mu.Lock()
	defer w.mu.Unlock()
	faultFree := len(w.kills) == 0 && len(w.stops) == 0 && !w.clusterFaulted()
	faulted := map[string]bool{}
	for _, c := range ln.cuts {
		faulted[ln.turns[c.turn.TurnID].node] = true
	}
	// The calls queued for a stopped node past the call timeout: their
	// answer (offline) is checked below.
	offlineChecked := map[string]bool{}
	for _, q := range ln.queued {
		faulted[q.node] = true
		for _, t := range q.turns {
			offlineChecked[t.TurnID] = q.want == answerOffline
		}
	}
	ids := slices.Sorted(func(yield func(string) bool) {
		for id := range ln.turns {
			if !yield(id) {
				return
			}
		}
	})
	ran := 0
	for _, id := range ids {
		rt := ln.turns[id]
		t := rt.turn
		n := count(rt)
		ran += n
		answer := text(t)
		finished := echoed(answer, t.Marker)
		switch {
		case n > 1:
			fail("%s: marker %s appears %d times in %s/%s", id, t.Marker, n, rt.node, remoteFile)
		case n == 0 && finished:
			fail("%s was answered with its marker, but the marker is not in %s/%s", id, rt.node, remoteFile)
		case n == 1 && !t.Delivered:
			fail("%s never reached the hub, but its marker is in %s/%s", id, rt.node, remoteFile)
		}
		if faultFree && !faulted[rt.node] && !finished {
			fail("%s on node %s, which no fault touched, was not answered with its marker: %q", id, rt.node, preview(answer))
		}
		if w.cluster != nil && t.Delivered && !finished && !offlineChecked[id] && !strings.Contains(answer, answerUnsure) {
			// On a cluster a call waits for its node through any server
			// failing: it runs, or its fate is said to be unknown.
			fail("%s was answered neither with its marker nor that it may or may not have completed: %q", id, preview(answer))
		}
	}
	for _, c := range ln.cuts {
		if got := text(c.turn); !containsAll(got, c.answer) {
			fail("%s, cut by a node step, was answered %q, which does not carry %q", c.turn.TurnID, preview(got), c.answer)
		}
		if n := len(answers[c.turn.TurnID]); n == 0 {
			fail("%s, cut by a node step, has no answer", c.turn.TurnID)
		}
	}
	for _, q := range ln.queued {
		for _, t := range q.turns {
			rt := ln.turns[t.TurnID]
			n, got := count(rt), text(t)
			switch q.want {
			case "ran":
				if n != 1 || !echoed(got, t.Marker) {
					fail("%s, queued while node %s was down, did not run once when it came back (marker %d times, answer %q)", t.TurnID, q.node, n, preview(got))
				}
			case answerOffline:
				if n != 0 {
					fail("%s, answered offline, ran when node %s came back", t.TurnID, q.node)
				}
				if !strings.Contains(got, answerOffline) {
					fail("%s, queued while node %s was down past the call timeout, was answered %q, not that the node is offline", t.TurnID, q.node, preview(got))
				}
			}
		}
	}
	for _, p := range ln.procs {
		for _, r := range p.allRuns() {
			data, _ := os.ReadFile(r.log)
			for _, bad := range []string{"WARNING: DATA RACE", "panic:", "fatal error:"} {
				if j := strings.Index(string(data), bad); j >= 0 {
					fail("node %s run %d reported %q:\n%s", p.node, r.n, bad, data[j:min(len(data), j+600)])
				}
			}
		}
	}
	w.logf("nodes: %d remote turns, %d side effects, %d node kills, %d cut, %d queued checks", len(ids), ran, ln.kills, len(ln.cuts), len(ln.queued))
	return v
}

// markup is the HTML of a Telegram message's formatting.
var markup = regexp.MustCompile(`<[^>]*>`)

// echoed reports whether an answer holds the marker as a line of its own
// (its markup aside): the command's output, not the command line the
// reply quotes.
func echoed(answer, marker string) bool {
	for _, l := range strings.Split(answer, "\n") {
		if strings.TrimSpace(markup.ReplaceAllString(l, "")) == marker {
			return true
		}
	}
	return false
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// nodeLogs are the node runs' output files.
func (w *world) nodeLogs() []string {
	if w.nodes == nil {
		return nil
	}
	var out []string
	for k := 1; k <= w.sc.Hub.Nodes; k++ {
		for _, r := range w.nodes.procs[nodeName(k)].allRuns() {
			out = append(out, r.log)
		}
	}
	return out
}
