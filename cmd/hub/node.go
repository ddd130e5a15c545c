package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"sort"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/metrics"
	"github.com/a6afc2ce/hermes-hub/nodes"
)

const nodeUsage = `hub node --config FILE
hub node init --name NAME --seed FILE

Runs this machine as a remote node of a hub: it connects to the hub's NATS
with its nkey, runs the calls the hub sends to its workspaces, each at most
once, and heartbeats. The configuration:
  node: {name: db-1, nats_url: nats://hub.example:4222, nkey_file: ./db-1.nk}
  state_dir: .hub-node
  workspaces: {logs: {path: /var/log/app}}
"init" writes a fresh nkey seed (owner-only) and prints the block to add
under nodes: in the hub's configuration. See docs/nodes.md.`

func runNode(env *cliEnv, args []string) error {
	if len(args) > 0 && args[0] == "init" {
		return runNodeInit(env, args[1:])
	}
	f := newFlags(env, "node", nodeUsage)
	cfgPath := f.String("config", "", "the node's configuration file")
	if _, err := f.parse(args); err != nil {
		return err
	}
	if *cfgPath == "" {
		return usagef("give the node's configuration: hub node --config FILE")
	}
	nf, err := config.LoadNode(*cfgPath, os.LookupEnv)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(env.stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	key, err := nodes.LoadSeed(nf.Node.NKeyFile)
	if err != nil {
		return err
	}
	execs, closeAll, err := buildNodeWorkspaces(nf, logger)
	if err != nil {
		return err
	}
	defer closeAll()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	n, err := nodes.StartNode(ctx, nodes.NodeOptions{
		Name: nf.Node.Name, URL: nf.Node.NATSURL, CAFile: nf.Node.CAFile, Key: key, StateDir: nf.StateDir,
		Workspaces: execs, Default: nf.DefaultWorkspace, Version: hubVersion(),
		Concurrency: nf.Node.Concurrency, Heartbeat: nf.Node.Heartbeat.D(), Logger: logger,
	})
	if err != nil {
		return err
	}
	return n.Run(ctx)
}

// buildNodeWorkspaces is the one place a node builds its toolchain: one
// executor per configured workspace, every verb, the node's state
// directory, configuration file and seed protected. Named workspaces with
// destinations plug in here.
func buildNodeWorkspaces(nf *config.NodeFile, logger *slog.Logger) (map[string]*executor.Executor, func(), error) {
	execs := map[string]*executor.Executor{}
	var tcs []*toolchain
	closeAll := func() {
		for _, tc := range tcs {
			tc.Close()
		}
	}
	names := make([]string, 0, len(nf.Workspaces))
	for name := range nf.Workspaces {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		cfg := config.Default()
		cfg.Workspace, cfg.StateDir = nf.Workspaces[name].Path, nf.StateDir
		cfg.Verbs.Proc.User = nf.Verbs.Proc.User
		tc, err := buildExecutor(cfg, logger, nf.ProtectedFiles()...)
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("workspace %s: %w", name, err)
		}
		tcs = append(tcs, tc)
		execs[name] = tc.exec
	}
	if len(tcs) > 0 {
		tcs[0].runAs.log(logger) // the same for every workspace
	}
	return execs, closeAll, nil
}

func runNodeInit(env *cliEnv, args []string) error {
	f := newFlags(env, "node init", nodeUsage)
	name := f.String("name", "", "the node's name (as the hub will call it)")
	seed := f.String("seed", "", "the file to write the node's nkey seed to (owner-only; never overwritten)")
	if _, err := f.parse(args); err != nil {
		return err
	}
	if err := config.ValidNodeName(*name); err != nil {
		return usagef("--name: %v", err)
	}
	if *seed == "" {
		return usagef("give the seed file: --seed FILE")
	}
	pub, err := nodes.NewSeed(*seed)
	if err != nil {
		return err
	}
	fmt.Fprintf(env.stdout, "Wrote the nkey seed of node %s to %s (keep it on that machine, owner-only).\nAdd this under nodes: in the hub's configuration:\n\n  %s:\n    nkey: %s\n", *name, *seed, *name, pub)
	return nil
}

const nodesUsage = `hub nodes list [--json]

Lists the configured remote nodes: online or offline, version, last
heartbeat, workspaces and load. It reads the hub's NATS with the hub's key
(from the state directory), so it needs the hub (or its NATS) running.`

func runNodes(env *cliEnv, args []string) error {
	f := newFlags(env, "nodes", nodesUsage)
	var c commonFlags
	c.register(f, false)
	asJSON := f.Bool("json", false, "print JSON")
	pos, err := f.parse(args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || pos[0] != "list" {
		return usagef("give a subcommand: list")
	}
	cfg, err := loadConfig(c)
	if err != nil {
		return err
	}
	listStatus, closeConn, err := dialNodes(cfg)
	if err != nil {
		return err
	}
	defer closeConn()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	list, err := listStatus(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		printJSON(env.stdout, list)
		return nil
	}
	if len(list) == 0 {
		fmt.Fprintln(env.stdout, "No nodes configured. Add one with: hub node init --name NAME --seed FILE")
		return nil
	}
	tw := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tSTATE\tVERSION\tLAST SEEN\tWORKSPACES\tLOAD")
	for _, s := range list {
		if s.Heartbeat == nil {
			fmt.Fprintf(tw, "%s\toffline\t-\t-\t-\t-\n", s.Name)
			continue
		}
		hb := s.Heartbeat
		fmt.Fprintf(tw, "%s\tonline\t%s\t%s\t%v\t%.2f %.2f %.2f\n", s.Name, hb.Version, hb.LastSeen.UTC().Format(time.RFC3339), hb.Workspaces, hb.Load[0], hb.Load[1], hb.Load[2])
	}
	return tw.Flush()
}

// openNodes starts the hub's end of the remote nodes from the
// configuration, its NATS state kept through the state directory state
// (nil: opened from the configuration's state_dir); onCall (may be nil)
// is told of every call.
func openNodes(ctx context.Context, cfg *config.Config, state *os.Root, clk clock.Clock, logger *slog.Logger, onCall func(nodes.CallStats)) (*nodes.Hub, error) {
	keys := map[string]string{}
	for name, n := range cfg.Nodes {
		keys[name] = n.NKey
	}
	return nodes.OpenHub(ctx, nodes.HubOptions{
		StateDir: cfg.StateDir, State: state, Embedded: cfg.NATS.Embedded, Listen: cfg.NATS.ListenAddress(),
		CertFile: cfg.NATS.CertFile, KeyFile: cfg.NATS.KeyFile, URL: cfg.NATS.URL, CAFile: cfg.NATS.CAFile,
		Replicas: cfg.NATS.ReplicaCount(), AckWait: cfg.NATS.AckWaitTime(),
		Nodes: keys, CallTimeout: cfg.NATS.Timeout(), Limits: cfg.NATS.Limits(), OnCall: onCall, Clock: clk, Logger: logger,
	})
}

// nodeCallMetrics counts the calls to nodes in mx (docs/metrics.md).
func nodeCallMetrics(mx *metrics.Metrics) func(nodes.CallStats) {
	return func(s nodes.CallStats) {
		mx.NodeCall(metrics.NodeCall{
			Node: s.Node, Status: s.Status, Answered: s.Answered(), RoundTrip: s.RoundTrip,
			Ledger: s.Timing.Ledger, Slot: s.Timing.Slot, Run: s.Timing.Run,
		})
	}
}
