package web

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/internal/testkit"

	"github.com/a6afc2ce/hermes-hub/config"
)

func TestRunServesAndShutsDown(t *testing.T) {
	e := newEnv(t, envConfig{noServer: true})
	e.srv.Mount("/telegram/webhook", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Telegram-Bot-Api-Secret-Token") != "s3cret" {
			http.Error(w, "bad secret", http.StatusUnauthorized)
			return
		}
		b, _ := io.ReadAll(r.Body)
		w.Write(append([]byte("ok:"), b...))
	}))
	e.srv.Mount("/api/sneaky", http.NotFoundHandler())       // refused: under /api/
	e.srv.Mount("/telegram/webhook", http.NotFoundHandler()) // refused: already mounted; must not panic
	e.srv.Mount("/", http.NotFoundHandler())                 // refused: would hide the panel

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.srv.Run(ctx) }()
	waitUntil(t, "the listener", func() bool { return e.srv.Addr() != "" })
	base := "http://" + e.srv.Addr()
	if !strings.HasPrefix(base, "http://127.0.0.1:") {
		t.Fatalf("Addr = %q", e.srv.Addr())
	}
	if got, want := e.srv.LoginURL(), base+"/#token="+e.token; got != want {
		t.Errorf("LoginURL = %q, want %q", got, want)
	}
	if e.srv.Name() != "web" {
		t.Errorf("Name = %q", e.srv.Name())
	}
	c := &http.Client{Timeout: testkit.Wait}
	if r := doHTTP(t, c, base, req{method: "GET", path: "/"}); r.status != 200 || !strings.Contains(string(r.body), "Hermes Hub") {
		t.Fatalf("GET / on the listener: %d", r.status)
	}
	r := doHTTP(t, c, base, req{method: "POST", path: "/telegram/webhook", body: `{"update_id":1}`, header: map[string]string{"X-Telegram-Bot-Api-Secret-Token": "s3cret"}})
	if r.status != 200 || string(r.body) != `ok:{"update_id":1}` {
		t.Errorf("mounted handler without panel auth: %d %s", r.status, r.body)
	}
	if r := doHTTP(t, c, base, req{method: "POST", path: "/telegram/webhook", body: "{}"}); r.status != http.StatusUnauthorized {
		t.Errorf("mounted handler with a wrong secret: %d", r.status)
	}
	if r := doHTTP(t, c, base, req{method: "GET", path: "/api/sneaky"}); r.status != http.StatusUnauthorized {
		t.Errorf("a mount under /api/ bypassed auth: %d", r.status)
	}
	if r := doHTTP(t, c, base, req{method: "GET", path: "/"}); r.status != 200 {
		t.Errorf("mounting / hid the panel: %d", r.status)
	}
	if st := boardState(e); st != "running" {
		t.Errorf("adapter state %q, want running", st)
	}

	// An open event stream must not hold up the shutdown.
	sse := openSSEAt(t, c, base, e.token, "")
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(testkit.Wait):
		t.Fatal("Run did not return after its context ended")
	}
	select {
	case <-sse.done:
	case <-time.After(testkit.Wait):
		t.Fatal("the event stream stayed open after shutdown")
	}
	if st := boardState(e); st != "stopped" {
		t.Errorf("adapter state %q after Run, want stopped", st)
	}
	if err := e.srv.Run(context.Background()); err == nil {
		t.Error("a second Run succeeded")
	}
}

func boardState(e *testEnv) hub.State {
	for _, a := range e.rt.Board.All() {
		if a.Name == "web" {
			return a.State
		}
	}
	return ""
}

func TestRunReportsListenErrors(t *testing.T) {
	e := newEnv(t, envConfig{})
	// The httptest listener's port is taken.
	s, err := New(serverOptions(e.rt, e.cfg.Web))
	if err != nil {
		t.Fatal(err)
	}
	s.cfg.Listen = strings.TrimPrefix(e.ts.URL, "http://")
	if err := s.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "listen") {
		t.Errorf("Run on a busy port: %v", err)
	}
	s2, _ := New(serverOptions(e.rt, e.cfg.Web))
	s2.cfg.TLSCert, s2.cfg.TLSKey = "/nonexistent/cert.pem", "/nonexistent/key.pem"
	if err := s2.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "TLS") {
		t.Errorf("Run with a missing certificate: %v", err)
	}
}

// selfSigned writes a certificate for 127.0.0.1 and its key as PEM files.
func selfSigned(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "hub test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

func TestRunWithTLS(t *testing.T) {
	certFile, keyFile, pool := selfSigned(t)
	e := newEnv(t, envConfig{noServer: true, mod: func(c *config.Config) {
		c.Web.TLSCert, c.Web.TLSKey = certFile, keyFile
	}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.srv.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	waitUntil(t, "the listener", func() bool { return e.srv.Addr() != "" })
	base := "https://" + e.srv.Addr()
	if !strings.HasPrefix(e.srv.LoginURL(), base+"/#token=") {
		t.Errorf("LoginURL = %q, want it under %s", e.srv.LoginURL(), base)
	}
	c := &http.Client{Timeout: testkit.Wait, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	r := doHTTP(t, c, base, req{method: "POST", path: "/api/login", body: `{"token":"` + e.token + `"}`, ctype: "application/json"})
	if r.status != http.StatusOK {
		t.Fatalf("login over TLS: %d %s", r.status, r.body)
	}
	cookies := (&http.Response{Header: r.header}).Cookies()
	if len(cookies) != 1 || !cookies[0].Secure || !cookies[0].HttpOnly {
		t.Fatalf("cookie over TLS: %+v, want one Secure HttpOnly cookie", cookies)
	}
	// The own origin over TLS is https://host.
	r = doHTTP(t, c, base, req{method: "POST", path: "/api/targets", body: `{"target":"web"}`, ctype: "application/json", cookie: cookies[0], origin: base})
	if r.status != http.StatusOK {
		t.Errorf("cookie POST with the https origin: %d %s", r.status, r.body)
	}
	r = doHTTP(t, c, base, req{method: "POST", path: "/api/targets", body: `{"target":"web"}`, ctype: "application/json", cookie: cookies[0], origin: "http://" + e.srv.Addr()})
	if r.status != http.StatusForbidden {
		t.Errorf("cookie POST with the http origin on a TLS listener: %d, want 403", r.status)
	}
}
