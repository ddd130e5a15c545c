package lab

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/a6afc2ce/hermes-hub/internal/natstest"
)

// A NATS cluster in the lab (hub.cluster): three nats-server processes
// (internal/natstest: the program built from the module, each server with
// its own storage on loopback), configured with `hub nats config`. The hub
// uses them through nats.url with nats.replicas 3; the nodes connect to
// all three. nats steps kill, stop and start servers.

// clusterSize is the one size hub.cluster accepts.
const clusterSize = 3

// labCluster is a world's NATS cluster.
type labCluster struct {
	c *natstest.Cluster

	mu sync.Mutex
	// faults are when a nats step stopped or killed a server.
	faults []time.Time
	// failovers are, for each step that stopped or killed a leader or
	// every server, how long until the first remote turn sent after it
	// was answered.
	failovers []time.Duration
	measuring sync.WaitGroup
}

func (n *NATSStep) validate(sc *Scenario) error {
	if sc.Hub.Cluster == 0 {
		return errors.New("a nats step needs hub.cluster")
	}
	switch n.Action {
	case "kill", "stop", "start", "restart":
	default:
		return fmt.Errorf("nats.action %q is not accepted (accepted: kill, stop, start, restart)", n.Action)
	}
	servers := []string{"leader", "follower", "all"}
	for i := 1; i <= sc.Hub.Cluster; i++ {
		servers = append(servers, fmt.Sprintf("s%d", i))
	}
	switch {
	case !slices.Contains(servers, n.Server):
		return fmt.Errorf("nats.server %q is not accepted (accepted: %s)", n.Server, strings.Join(servers, ", "))
	case n.Action == "start" && (n.Server == "leader" || n.Server == "follower"):
		return errors.New("nats start names a server (s1, …) or all: the servers that are down")
	case n.During != "" && (n.During != "remote" || n.Action == "start"):
		return fmt.Errorf("nats.during %q is not accepted (accepted: remote, with kill, stop or restart)", n.During)
	}
	return nil
}

// setupCluster chooses the servers' ports and directories; they start
// once the hub's configuration is written (startCluster).
func (w *world) setupCluster() error {
	if w.sc.Hub.Cluster == 0 {
		return nil
	}
	c, err := natstest.NewCluster(w.dir+"/nats", w.sc.Hub.Cluster)
	if err != nil {
		return err
	}
	w.cluster = &labCluster{c: c}
	return nil
}

// startCluster configures every server with `hub nats config` for the
// hub's configuration file cfg and starts them.
func (w *world) startCluster(cfg string) error {
	if w.cluster == nil {
		return nil
	}
	c := w.cluster.c
	for _, s := range c.Servers {
		cmd := exec.CommandContext(w.ctx, w.opt.HubBinary, "nats", "config", "--config", cfg, "--server-name", s.Name,
			"--listen", s.Listen(), "--store-dir", s.StoreDir(), "--cluster-listen", s.ClusterListen(), "--routes", strings.Join(c.Routes(s), ","))
		cmd.Env = append(cmd.Environ(), "HUB_CONFIG=")
		out, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("hub nats config for %s: %w", s.Name, exitText(err))
		}
		if err := s.Configure(string(out)); err != nil {
			return err
		}
	}
	if err := c.Start(w.ctx); err != nil {
		return err
	}
	w.logf("nats cluster of %d servers ready: %s", len(c.Servers), c.URLs("nats"))
	return nil
}

func exitText(err error) error {
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		return fmt.Errorf("%w: %s", err, ee.Stderr)
	}
	return err
}

// natsURL is where the hub and its nodes reach NATS: the cluster's
// servers, or the embedded server's port.
func (w *world) natsURL() string {
	if w.cluster != nil {
		return w.cluster.c.URLs("nats")
	}
	return fmt.Sprintf("nats://127.0.0.1:%d", w.nodes.port)
}

// natsStep runs a nats step.
func (w *world) natsStep(s NATSStep) error {
	lc := w.cluster
	if s.During == "remote" {
		ctx, cancel := context.WithTimeout(w.ctx, 3*time.Minute)
		defer cancel()
		if err := w.until(ctx, "a remote-long call running on a node", w.remoteRunning); err != nil {
			return err
		}
	}
	targets, what, err := w.servers(s.Server, s.Action == "start")
	if err != nil || len(targets) == 0 {
		return err
	}
	if s.Action != "start" {
		at := time.Now()
		for _, srv := range targets {
			end := srv.Kill
			if s.Action == "stop" {
				end = srv.Stop
			}
			if err := end(); err != nil {
				return err
			}
		}
		lc.mu.Lock()
		lc.faults = append(lc.faults, at)
		lc.mu.Unlock()
		w.logf("nats: %s %s", s.Action, what)
		if s.Server == "leader" || s.Server == "all" {
			lc.measuring.Go(func() { w.measureFailover(at, what) })
		}
		if s.Action != "restart" {
			return nil
		}
	}
	if err := lc.c.Start(w.ctx, targets...); err != nil {
		return err
	}
	w.logf("nats: %s started and current with the cluster", what)
	return nil
}

// servers resolves a nats step's server: the leader of node n1's queue
// (HUB_NODE_n1), a follower of it, every server, or one by name; with
// down, the servers not running among them.
func (w *world) servers(name string, down bool) ([]*natstest.Server, string, error) {
	c := w.cluster.c
	var leader *natstest.Server
	if name == "leader" || name == "follower" {
		ctx, cancel := context.WithTimeout(w.ctx, time.Minute)
		defer cancel()
		if err := w.until(ctx, "a leader of HUB_NODE_n1", func() bool {
			var err error
			leader, err = c.StreamLeader(ctx, "HUB", "HUB_NODE_"+nodeName(1))
			return err == nil
		}); err != nil {
			return nil, "", err
		}
	}
	var out []*natstest.Server
	for _, s := range c.Servers {
		switch {
		case down && s.Running(), !down && !s.Running():
		case name == "all", name == s.Name, name == "leader" && s == leader:
			out = append(out, s)
		case name == "follower" && s != leader && len(out) == 0:
			out = append(out, s)
		}
	}
	if len(out) == 0 && !down {
		return nil, "", fmt.Errorf("nats.server %s: no such server runs", name)
	}
	names := make([]string, 0, len(out))
	for _, s := range out {
		names = append(names, s.Name)
	}
	what := strings.Join(names, ", ")
	if name == "leader" || name == "follower" {
		what = fmt.Sprintf("%s (%s of HUB_NODE_%s)", what, name, nodeName(1))
	}
	return out, what, nil
}

// measureFailover records how long after at the first remote turn sent at
// or after it was answered (at most 3 minutes).
func (w *world) measureFailover(at time.Time, what string) {
	ctx, cancel := context.WithTimeout(w.ctx, 3*time.Minute)
	defer cancel()
	err := w.until(ctx, "an answer after the fault", func() bool {
		w.nodes.mu.Lock()
		var sent []*Turn
		for _, rt := range w.nodes.turns {
			if !rt.turn.Sent.Before(at) {
				sent = append(sent, rt.turn)
			}
		}
		w.nodes.mu.Unlock()
		for _, t := range sent {
			if w.answeredByFake(t) {
				return true
			}
		}
		return false
	})
	if err != nil {
		w.logf("nats: no remote turn sent after %s was answered: %v", what, err)
		return
	}
	d := time.Since(at)
	w.cluster.mu.Lock()
	w.cluster.failovers = append(w.cluster.failovers, d)
	w.cluster.mu.Unlock()
	w.logf("nats: failover after %s: the first remote turn sent after it answered in %s", what, d.Round(time.Millisecond))
}

// healCluster starts every server that is down.
func (w *world) healCluster() error {
	if w.cluster == nil {
		return nil
	}
	return w.natsStep(NATSStep{Server: "all", Action: "start"})
}

// clusterFaulted reports whether a nats step stopped or killed a server.
func (w *world) clusterFaulted() bool {
	if w.cluster == nil {
		return false
	}
	w.cluster.mu.Lock()
	defer w.cluster.mu.Unlock()
	return len(w.cluster.faults) > 0
}

// failovers are the failover times measured (after the measurements
// still running end).
func (w *world) failovers() []time.Duration {
	if w.cluster == nil {
		return nil
	}
	w.cluster.measuring.Wait()
	w.cluster.mu.Lock()
	defer w.cluster.mu.Unlock()
	return slices.Clone(w.cluster.failovers)
}

// closeCluster kills every server (the world's end).
func (w *world) closeCluster() {
	if w.cluster != nil {
		w.cluster.c.Close()
	}
}
