//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/a6afc2ce/hermes-hub/store"
)

// postMessage sends chat text through the panel's API as turn web.<id>.
func postMessage(t *testing.T, url, text, id string) {
	t.Helper()
	base := url[:strings.Index(url, "/#")]
	token := url[strings.Index(url, "#token=")+len("#token="):]
	body, _ := json.Marshal(map[string]string{"text": text, "client_turn_id": id})
	req, _ := http.NewRequest("POST", base+"/api/messages", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("message %s: %s", id, resp.Status)
	}
}

// TestBackupSurvivesAKilledHub: `hub backup` while `hub serve` runs
// writes a whole archive; a backup the hub is killed (SIGKILL) in the
// middle of is refused by `hub restore` and leaves nothing behind; the
// last whole backup restores into an empty directory with everything made
// before it started (a turn, pending and delivered outbox entries, mirror
// records, targets) and `hub serve` starts on it.
func TestBackupSurvivesAKilledHub(t *testing.T) {
	t.Parallel() // its own directories and processes: it runs beside the package's other long tests
	dir := workspace(t)
	cfg := filepath.Join(dir, "hub.yml")
	os.WriteFile(cfg, []byte("web:\n  listen: 127.0.0.1:0\n"), 0o600)
	// A large old run, so that a backup takes many socket buffers.
	big := filepath.Join(dir, ".hub", "flows", "20200101T000000Z-0001", "chat")
	os.MkdirAll(big, 0o700)
	line := `{"direction":"inbound","platform":"telegram","text":"` + strings.Repeat("y", 1000) + `"}` + "\n"
	os.WriteFile(filepath.Join(big, "inbound.jsonl"), bytes.Repeat([]byte(line), 16<<10), 0o600)

	cmd, url, _ := startServe(t, dir, "--config", cfg)
	hub := func(args ...string) string {
		t.Helper()
		out, errOut, code := runHub(t, dir, "", append(args, "--config", cfg)...)
		if code != 0 {
			t.Fatalf("hub %s: exit %d %s %s", strings.Join(args, " "), code, out, errOut)
		}
		return out
	}
	hub("targets", "add", "local:pma/deliveries.jsonl")
	hub("targets", "add", "telegram:4242") // telegram is off: its chunks wait
	postMessage(t, url, "/fs.exists README.md", "before")
	hub("send", "--turn", "send-before", "sent before the backup")
	waitUntil(t, "the local delivery", func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, ".hub", "pma", "deliveries.jsonl"))
		return strings.Contains(string(b), "sent before the backup")
	})
	if out := hub("backup", "b1.tar.gz"); !strings.Contains(out, "Backed up") {
		t.Fatalf("backup: %s", out)
	}
	if fi, err := os.Stat(filepath.Join(dir, "b1.tar.gz")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("backup file: %v %v", fi, err)
	}
	postMessage(t, url, "/fs.exists README.md", "after")
	hub("send", "--turn", "send-after", "sent after the backup")

	// A backup the hub is killed in: read its first bytes over the admin
	// socket, then SIGKILL the hub, which is blocked writing the rest.
	sock := filepath.Join(dir, ".hub", store.SocketFile)
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}}
	resp, err := client.Post("http://hub/api/backup", "application/json", nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("backup over the socket: %v %v", resp, err)
	}
	partial := make([]byte, 256<<10)
	if _, err := io.ReadFull(resp.Body, partial); err != nil {
		t.Fatal(err)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	rest, err := io.ReadAll(resp.Body)
	if err == nil {
		t.Fatalf("the backup stream ended cleanly after the hub was killed (%d more bytes)", len(rest))
	}
	os.WriteFile(filepath.Join(dir, "b2.tar"), append(partial, rest...), 0o600)
	_, errOut, code := runHub(t, dir, "", "restore", "b2.tar", "--state", filepath.Join(dir, "r2"))
	if code != 1 || !strings.Contains(errOut, "not a valid hub backup") {
		t.Fatalf("restore of the cut backup: %d %s", code, errOut)
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, "r2")); len(ents) != 0 {
		t.Fatalf("the refused restore left %v", ents)
	}

	// With no hub running (its socket left behind), the CLI backs the
	// state up itself; that backup has what came after the first.
	hub("backup", "b3.tar")
	out, errOut, code := runHub(t, dir, "", "restore", "b3.tar", "--state", filepath.Join(dir, "r3"))
	if code != 0 {
		t.Fatalf("restore of the offline backup: %s %s", out, errOut)
	}
	after := false
	store.ReadMirror(flowsRoot(t, filepath.Join(dir, "r3", store.FlowsDir)), store.MirrorFilter{}, func(r store.MirrorRecord) error {
		after = after || r.Text == "sent after the backup"
		return nil
	})
	if !after {
		t.Fatal("the offline backup lacks the CLI's record of the later send")
	}

	// The last whole backup restores.
	r1 := filepath.Join(dir, "r1")
	out, errOut, code = runHub(t, dir, "", "restore", "b1.tar.gz", "--state", r1)
	if code != 0 || !strings.Contains(out, "Restored") {
		t.Fatalf("restore: %d %s %s", code, out, errOut)
	}
	st, err := store.Open(r1, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ledger, err := store.OpenLedger(st.DB())
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]bool{"web.before": true, "web.after": false} {
		rec, err := ledger.Get(id)
		if err != nil || (rec != nil) != want {
			t.Errorf("turn %s in the restored ledger: %+v %v, want present %v", id, rec, err, want)
		}
	}
	st.Close()
	offline := func(args ...string) string {
		t.Helper()
		out, errOut, code := runHub(t, dir, "", append(args, "--config", cfg, "--state", r1)...)
		if code != 0 {
			t.Fatalf("hub %s on the restored state: %d %s", strings.Join(args, " "), code, errOut)
		}
		return out
	}
	if out := offline("targets", "list"); !strings.Contains(out, "local:pma/deliveries.jsonl") || !strings.Contains(out, "telegram:4242") {
		t.Errorf("restored targets: %s", out)
	}
	if out := offline("outbox", "list", "--json"); !strings.Contains(out, "send-before") || !strings.Contains(out, "telegram:4242") || strings.Contains(out, "send-after") {
		t.Errorf("restored pending outbox: %s", out)
	}
	var mirrored strings.Builder
	store.ReadMirror(flowsRoot(t, filepath.Join(r1, store.FlowsDir)), store.MirrorFilter{}, func(r store.MirrorRecord) error {
		fmt.Fprintf(&mirrored, "%s %s %s\n", r.Platform, r.MessageID, r.Text)
		return nil
	})
	for _, want := range []string{"web before /fs.exists README.md", "sent before the backup", "telegram  " + strings.Repeat("y", 10)} {
		if !strings.Contains(mirrored.String(), want) {
			t.Errorf("the restored mirrors lack %q", want)
		}
	}
	if strings.Contains(mirrored.String(), "after") {
		t.Errorf("the restored mirrors hold records made after the backup")
	}
	// The hub starts on the restored state and serves it.
	cmd2, _, logs2 := startServe(t, dir, "--config", cfg, "--state", r1)
	out, errOut, code = runHub(t, dir, "", "outbox", "list", "--config", cfg, "--state", r1, "--json")
	if code != 0 || !strings.Contains(out, "send-before") {
		t.Fatalf("outbox through the restored hub: %d %s %s", code, out, errOut)
	}
	stopServe(t, cmd2, logs2)
}
