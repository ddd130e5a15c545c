package nodes

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/internal/testkit"
)

// The hub's own user may only do what the hub needs: it cannot publish a
// result or a heartbeat as a node, nor listen on the nodes' inboxes.
func TestHubConfinedToItsSubjects(t *testing.T) {
	r := newRig(t, []string{"db-1"}, nil)
	kp, err := LoadSeed(HubSeedFile(r.dir))
	if err != nil {
		t.Fatal(err)
	}
	nc, errs := permissionErrors(t, r, kp, hubInbox)
	tests := []struct {
		name, subject string
		subscribe     bool
	}{
		{"a node's results", resultSubject("db-1"), false},
		{"a node's heartbeat", statusSubject("db-1"), false},
		{"a node's inbox", inboxPrefix("db-1") + ".>", true},
		{"every inbox", "_INBOX.>", true},
		{"the raw requests", requestSubject("db-1"), true},
		{"another stream's acks", "$JS.ACK.HUB_NODE_db-1.work.1.1.1.1.1", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { expectViolation(t, nc, errs, tc.subject, tc.subscribe) })
	}
	// What it needs still works: a call round trip and the node list.
	r.startNode(r.nodeOptions("db-1", r.keys["db-1"], t.TempDir()))
	c := wait(t, r.callAsync("db-1", Request{TurnID: "t.hubperm", Identity: "web", Envelope: echo("ok")}))
	if c.err != nil || !strings.Contains(string(c.resp.Result), `"ok"`) {
		t.Fatalf("call = %+v %s", c, c.resp.Result)
	}
	if l, err := ListStatus(t.Context(), nc, []string{"db-1"}); err != nil || len(l) != 1 {
		t.Fatalf("list = %v %v", l, err)
	}
}

// A node that publishes another node's call id first (call ids are
// predictable) cannot have the real result dropped as a duplicate: each
// node's results are deduplicated in a stream of their own.
func TestForgedCallIDDoesNotShadowTheRealResult(t *testing.T) {
	r := newRig(t, []string{"db-1", "db-2"}, nil)
	ch := r.callAsync("db-1", Request{TurnID: "t.shadow", Identity: "web", Envelope: echo("real")})
	id := CallID("t.shadow", 0)
	testkit.WaitFor(t, "the call to wait", func() bool {
		r.hub.mu.Lock()
		defer r.hub.mu.Unlock()
		return r.hub.pending[id] != nil
	})
	nc, _ := permissionErrors(t, r, r.keys["db-2"], inboxPrefix("db-2"))
	js, _ := jetstream.New(nc)
	data, _ := json.Marshal(resultMsg{CallID: id, Node: "db-1", Status: StatusDone, Result: json.RawMessage(`{"succeeded":true,"text":"forged"}`)})
	if _, err := js.Publish(t.Context(), resultSubject("db-2"), data, jetstream.WithMsgID(id)); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the forged result dropped", func() bool {
		return strings.Contains(r.logs.String(), "it came from another node than the call was sent to")
	})
	r.startNode(r.nodeOptions("db-1", r.keys["db-1"], t.TempDir()))
	c := wait(t, ch)
	if c.err != nil || c.resp.Node != "db-1" || !strings.Contains(string(c.resp.Result), `"real"`) {
		t.Fatalf("call = %+v, %s", c, c.resp.Result)
	}
}

// writeTestCert writes a self-signed CA and a certificate for 127.0.0.1
// signed by it, good for a server and for a client (as a cluster's routes
// are both); it returns the CA, certificate and key files.
func writeTestCert(t *testing.T, dir string) (ca, cert, key string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := clock.Real{}.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "hub test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	srvTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "hub"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, caCert, &srvKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(srvKey)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	return write("ca.pem", "CERTIFICATE", caDER), write("cert.pem", "CERTIFICATE", srvDER), write("key.pem", "EC PRIVATE KEY", keyDER)
}

// With TLS configured the embedded server requires it: a node that trusts
// the CA calls through it, a plain connection is refused.
func TestEmbeddedTLS(t *testing.T) {
	ca, cert, key := writeTestCert(t, t.TempDir())
	r := newRig(t, []string{"db-1"}, func(o *HubOptions) { o.CertFile, o.KeyFile = cert, key })
	url := r.hub.ClientURL()
	if !strings.HasPrefix(url, "tls://127.0.0.1:") {
		t.Fatalf("client URL %s, want tls://127.0.0.1:…", url)
	}
	opts := r.nodeOptions("db-1", r.keys["db-1"], t.TempDir())
	opts.CAFile = ca
	r.startNode(opts)
	c := wait(t, r.callAsync("db-1", Request{TurnID: "t.tls", Identity: "web", Envelope: echo("over tls")}))
	if c.err != nil || !strings.Contains(string(c.resp.Result), `"over tls"`) {
		t.Fatalf("call = %+v %s", c, c.resp.Result)
	}
	// Without the CA the certificate is not trusted, by a node or a plain
	// client (the server requires TLS, so the client must upgrade).
	noCA := r.nodeOptions("db-1", r.keys["db-1"], t.TempDir())
	if _, err := StartNode(t.Context(), noCA); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("a node without the CA: err = %v", err)
	}
	pub, _ := r.keys["db-1"].PublicKey()
	plain := "nats://" + strings.TrimPrefix(url, "tls://")
	if nc, err := nats.Connect(plain, nats.Nkey(pub, r.keys["db-1"].Sign), nats.Timeout(5*time.Second)); err == nil {
		nc.Close()
		t.Fatal("a plain connection to a TLS server was accepted")
	}
}
