package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/internal/natstest"
	"github.com/a6afc2ce/hermes-hub/internal/testkit"
	"github.com/a6afc2ce/hermes-hub/nodes"
)

// hubCluster is a hub's configuration on a three-server NATS cluster
// whose servers were configured by `hub nats config`.
type hubCluster struct {
	dir, config string
	cluster     *natstest.Cluster
	seeds       map[string]string // node → seed file
}

// newHubCluster writes hub.yml in dir (nats.url naming the three servers,
// nats.replicas 3, a key for each node) and configures the servers with
// `hub nats config`: s1 with its whole configuration from the flags, s2
// and s3 with their own lines and an include of the shared part. extra
// is added to hub.yml.
func newHubCluster(t *testing.T, dir string, names []string, natsMore, extra string) *hubCluster {
	t.Helper()
	c, err := natstest.NewCluster(filepath.Join(dir, "nats"), 3)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	hc := &hubCluster{dir: dir, config: filepath.Join(dir, "hub.yml"), cluster: c}
	nats := fmt.Sprintf("{url: %q, replicas: 3%s}", c.URLs("nats"), natsMore)
	hc.seeds = writeHubConfig(t, hc.config, filepath.Join(dir, "state"), nats, names, extra)
	shared, errs, code := runHub(t, dir, "", "nats", "config", "--config", hc.config)
	if code != 0 {
		t.Fatalf("hub nats config: %d %s", code, errs)
	}
	if err := os.WriteFile(filepath.Join(dir, "nats", "hub-accounts.conf"), []byte(shared), 0o600); err != nil {
		t.Fatal(err)
	}
	for i, s := range c.Servers {
		if i == 0 {
			out, errs, code := runHub(t, dir, "", "nats", "config", "--config", hc.config, "--server-name", s.Name, "--listen", s.Listen(),
				"--store-dir", s.StoreDir(), "--cluster-listen", s.ClusterListen(), "--routes", strings.Join(c.Routes(s), ","))
			if code != 0 {
				t.Fatalf("hub nats config for %s: %d %s", s.Name, code, errs)
			}
			if err := s.Configure(out); err != nil {
				t.Fatal(err)
			}
			continue
		}
		own := fmt.Sprintf("server_name: %s\nlisten: %q\njetstream: {store_dir: %q}\ncluster: {name: %s, listen: %q, routes: [%s]}\ninclude ../hub-accounts.conf\n",
			s.Name, s.Listen(), s.StoreDir(), natstest.ClusterName, s.ClusterListen(), strings.Join(c.Routes(s), ", "))
		if err := s.Configure(own); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	return hc
}

// writeHubConfig writes the hub's configuration file cfg: its state
// directory, its nats section, a fresh key for each node (the seeds,
// whose files it returns, are next to cfg) and extra.
func writeHubConfig(t *testing.T, cfg, state, nats string, names []string, extra string) map[string]string {
	t.Helper()
	seeds := map[string]string{}
	var b strings.Builder
	fmt.Fprintf(&b, "state_dir: %q\nnats: %s\nnodes:\n", state, nats)
	for _, n := range names {
		seeds[n] = filepath.Join(filepath.Dir(cfg), n+".nk")
		pub, err := nodes.NewSeed(seeds[n])
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "  %s: {nkey: %s}\n", n, pub)
	}
	b.WriteString(extra)
	if err := os.WriteFile(cfg, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return seeds
}

// TestClusterNATSConfig: `hub nats config` prints the servers' accounts,
// users and limits for the configured hub and nodes; three servers
// configured with it (whole, or sharing an included part) form a cluster
// on which the hub's streams are replicated, `hub node` serves calls and
// `hub nodes list` reads the nodes' liveness with the hub's key.
func TestClusterNATSConfig(t *testing.T) {
	dir := t.TempDir()
	hc := newHubCluster(t, dir, []string{"n1", "n2"}, "", "")
	cfg, err := config.Load(hc.config)
	if err != nil {
		t.Fatal(err)
	}
	h, err := openNodes(t.Context(), cfg, nil, nil, testkit.Discard(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	ws := workspace(t)
	nodeCfg := filepath.Join(dir, "n1.yml")
	if err := os.WriteFile(nodeCfg, []byte(fmt.Sprintf("node: {name: n1, nats_url: %q, nkey_file: %q, heartbeat: 200ms}\nstate_dir: %q\nworkspaces: {main: {path: %q}}\n",
		hc.cluster.URLs("nats"), hc.seeds["n1"], filepath.Join(dir, "n1-state"), ws)), 0o600); err != nil {
		t.Fatal(err)
	}
	r := &nodeRig{hub: h, config: nodeCfg, ws: ws}
	r.startNodeProcess(t)
	list := func() map[string]bool {
		out, errs, code := runHub(t, dir, "", "nodes", "list", "--config", hc.config, "--json")
		if code != 0 {
			// A cluster just formed, on a loaded machine, may not answer
			// within the command's 10 seconds: asked again.
			t.Logf("hub nodes list: %d %s", code, errs)
			return nil
		}
		var l []nodes.NodeStatus
		if err := json.Unmarshal([]byte(out), &l); err != nil {
			t.Fatalf("nodes list printed %q: %v", out, err)
		}
		online := map[string]bool{}
		for _, s := range l {
			online[s.Name] = s.Online
		}
		return online
	}
	testkit.WaitFor(t, "n1 online in hub nodes list", func() bool { o := list(); return o["n1"] && !o["n2"] })
	resp, err := h.Call(context.Background(), "n1", nodes.Request{TurnID: "t.cli", Envelope: []byte(existsEnv)})
	if err != nil || !strings.Contains(string(resp.Result), `"succeeded":true`) {
		t.Fatalf("call on the cluster: %v %s", err, resp.Result)
	}
	nc, err := nodes.DialHub(hc.cluster.URLs("nats"), cfg.StateDir, "")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	for _, stream := range []string{"HUB_NODE_n1", "HUB_RESULTS_n2", "KV_hub_nodes"} {
		s, err := js.Stream(t.Context(), stream)
		if err != nil || s.CachedInfo().Config.Replicas != 3 {
			t.Fatalf("stream %s: %v", stream, err)
		}
	}
}

// TestNATSConfigRefuses: `hub nats config` says what is wrong with its
// flags, and that the embedded server needs no configuration.
func TestNATSConfigRefuses(t *testing.T) {
	dir := t.TempDir()
	embedded := filepath.Join(dir, "embedded.yml")
	os.WriteFile(embedded, []byte("state_dir: st\nnats: {embedded: true}\n"), 0o600)
	url := filepath.Join(dir, "url.yml")
	os.WriteFile(url, []byte("state_dir: st\nnats: {url: 'nats://127.0.0.1:4222'}\n"), 0o600)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"nats"}, "give a subcommand: config"},
		{[]string{"nats", "config", "--config", embedded}, "nats.embedded is true"},
		{[]string{"nats", "config", "--config", url, "--routes", "127.0.0.1:6222"}, `--routes: "127.0.0.1:6222" is not a route address`},
		{[]string{"nats", "config", "--config", url, "--cluster-listen", "127.0.0.1:6222"}, "--server-name is needed in a cluster"},
		{[]string{"nats", "config", "--config", url, "--tls-cert", "c.pem"}, "--tls-cert and --tls-key go together"},
		{[]string{"nats", "config", "--config", url, "--route-cert", "c.pem", "--route-key", "k.pem"}, "--route-cert, --route-key and --route-ca go together"},
		{[]string{"nats", "config", "--config", url, "--listen", "0.0.0.0:4222"}, "--listen 0.0.0.0:4222 is not a loopback address, so --tls-cert and --tls-key must be set"},
		{[]string{"nats", "config", "--config", url, "--server-name", "s1", "--cluster-listen", "10.0.0.1:6222"}, "--cluster-listen 10.0.0.1:6222 is not a loopback address, so --route-cert, --route-key and --route-ca must be set"},
	} {
		_, errs, code := runHub(t, dir, "", tc.args...)
		if code != exitUsage || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, %q; want usage error %q", tc.args, code, errs, tc.want)
		}
	}
	out, errs, code := runHub(t, dir, "", "nats", "config", "--config", url)
	if code != 0 || !strings.Contains(out, `"HUB"`) || !strings.Contains(out, "max_payload") {
		t.Fatalf("accounts only: %d %s %s", code, out, errs)
	}
	if _, err := os.Stat(filepath.Join(dir, "st", "nats", "hub.nk")); err != nil {
		t.Fatalf("the hub's key was not created: %v", err)
	}
}
