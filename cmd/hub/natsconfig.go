package main

import (
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/nodes"
)

const natsUsage = `hub nats config [--config FILE] [server flags]

Prints the NATS server configuration the hub and its nodes need on an
existing server or cluster (nats.url): the largest message, the accounts
(HUB for the hub, NODE_<name> for each node), their users by nkey with
their permissions, the hub account's JetStream limits and each node
account's limits. The hub's key comes from the state directory
(nats/hub.nk, created if missing). Without server flags the output is the
part every server shares: save it and include it in each server's
configuration. With them it is one server's whole configuration. Print it
again, and reload every server, after adding or removing a node. See
docs/nodes.md, "Running on a NATS cluster".`

func runNATS(env *cliEnv, args []string) error {
	if len(args) == 0 || args[0] != "config" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			fmt.Fprintf(env.stdout, "Usage: %s\n", natsUsage)
			return nil
		}
		return usagef("give a subcommand: config")
	}
	f := newFlags(env, "nats config", natsUsage)
	var c commonFlags
	c.register(f, false)
	var s nodes.Server
	var routes string
	f.StringVar(&s.Name, "server-name", "", "this server's name, unique in the cluster")
	f.StringVar(&s.Listen, "listen", "", "this server's address for clients (host:port)")
	f.StringVar(&s.StoreDir, "store-dir", "", "this server's JetStream storage directory")
	f.StringVar(&s.ClusterName, "cluster-name", "", "the cluster's name (default hub, with --cluster-listen or --routes)")
	f.StringVar(&s.ClusterListen, "cluster-listen", "", "this server's address for the other servers (host:port)")
	f.StringVar(&routes, "routes", "", "the other servers' cluster addresses, comma-separated (nats://host:port)")
	f.StringVar(&s.CertFile, "tls-cert", "", "this server's certificate for clients (turns TLS on; with --tls-key)")
	f.StringVar(&s.KeyFile, "tls-key", "", "the key of --tls-cert")
	f.StringVar(&s.RouteCertFile, "route-cert", "", "this server's certificate for the other servers (turns TLS on between them; with --route-key and --route-ca)")
	f.StringVar(&s.RouteKeyFile, "route-key", "", "the key of --route-cert")
	f.StringVar(&s.RouteCAFile, "route-ca", "", "the CA that signed every server's --route-cert: only those servers may join")
	pos, err := f.parse(args[1:])
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	if err := serverFlags(&s, routes); err != nil {
		return err
	}
	cfg, err := loadConfig(c)
	if err != nil {
		return err
	}
	if cfg.NATS.Embedded {
		return usagef("nats.embedded is true: hub serve configures its own server; this prints the configuration of the servers at nats.url")
	}
	hubKey, err := nodes.HubKey(cfg.StateDir)
	if err != nil {
		return err
	}
	keys := map[string]string{}
	for name, n := range cfg.Nodes {
		keys[name] = n.NKey
	}
	sorted := make([]string, 0, len(keys))
	for name := range keys {
		sorted = append(sorted, name)
	}
	slices.Sort(sorted)
	names := strings.Join(sorted, ", ")
	if names == "" {
		names = "none yet"
	}
	fmt.Fprintf(env.stdout, "# NATS server configuration for the hub (state %s) and its nodes (%s), printed by `hub nats config`.\n", cfg.StateDir, names)
	fmt.Fprintf(env.stdout, "# Streams, consumers and the status bucket keep %d replicas (nats.replicas). Print it again after adding or removing a node.\n", cfg.NATS.ReplicaCount())
	return nodes.ServerConfig(env.stdout, nodes.Accounts{HubKey: hubKey, Nodes: keys, Limits: cfg.NATS.Limits(), Replicas: cfg.NATS.ReplicaCount()}, s)
}

// serverFlags checks the server flags of `hub nats config` and fills the
// cluster's name and routes.
func serverFlags(s *nodes.Server, routes string) error {
	for _, r := range strings.Split(routes, ",") {
		if r = strings.TrimSpace(r); r == "" {
			continue
		}
		if !strings.HasPrefix(r, "nats://") && !strings.HasPrefix(r, "tls://") {
			return usagef("--routes: %q is not a route address (accepted: nats://host:port, comma-separated)", r)
		}
		s.Routes = append(s.Routes, r)
	}
	if s.ClusterName == "" && (s.ClusterListen != "" || len(s.Routes) > 0) {
		s.ClusterName = "hub"
	}
	if (s.CertFile == "") != (s.KeyFile == "") {
		return usagef("--tls-cert and --tls-key go together")
	}
	routeTLS := s.RouteCertFile != "" && s.RouteKeyFile != "" && s.RouteCAFile != ""
	if !routeTLS && (s.RouteCertFile != "" || s.RouteKeyFile != "" || s.RouteCAFile != "") {
		return usagef("--route-cert, --route-key and --route-ca go together")
	}
	if s.ClusterName != "" && s.Name == "" {
		return usagef("--server-name is needed in a cluster: each server's must be its own")
	}
	// Deny by default: off loopback, clients and routes speak TLS.
	if !loopbackAddr(s.Listen) && s.CertFile == "" {
		return usagef("--listen %s is not a loopback address, so --tls-cert and --tls-key must be set: nodes connect with tls://", s.Listen)
	}
	if !loopbackAddr(s.ClusterListen) && !routeTLS {
		return usagef("--cluster-listen %s is not a loopback address, so --route-cert, --route-key and --route-ca must be set: the routes carry every call and answer, and without them any server could join", s.ClusterListen)
	}
	return nil
}

// loopbackAddr reports whether addr (host:port, or empty) stays on this
// machine.
func loopbackAddr(addr string) bool {
	if addr == "" {
		return true
	}
	host, _, err := net.SplitHostPort(addr)
	return err == nil && config.IsLoopback(host)
}
