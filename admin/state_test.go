package admin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/a6afc2ce/hermes-hub/admin"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/store"
)

// TestStateEndpointsAreTheOperators: pruning mirrors and backups answer
// the operator only, whatever a role grants; the operator gets the plan
// and a whole archive.
func TestStateEndpointsAreTheOperators(t *testing.T) {
	rt := openWithAccess(t, &config.Access{Roles: map[string]config.Role{"all": {Verbs: []string{"*", "admin.*"}}}, Grants: map[string][]string{"web": {"all"}}})
	api := admin.ForRuntime(rt)
	api.Version = "v-test"
	for _, ep := range []struct{ method, path string }{{"GET", "/api/mirror/prune"}, {"POST", "/api/mirror/prune"}, {"POST", "/api/backup"}} {
		if w := serve(api.HandlerAs("web"), ep.method, ep.path, ""); w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "only the operator") {
			t.Errorf("web %s %s: %d %s", ep.method, ep.path, w.Code, w.Body)
		}
	}
	op := api.HandlerAs(admin.Operator)
	w := serve(op, "GET", "/api/mirror/prune", "")
	var v admin.PruneView
	if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil || w.Code != 200 || !v.DryRun || len(v.Runs) != 1 || !v.Runs[0].Live || v.Runs[0].ID != rt.RunID {
		t.Fatalf("dry run: %d %s", w.Code, w.Body)
	}
	w = serve(op, "POST", "/api/backup?proc=true", "")
	if w.Code != 200 || w.Header().Get("Content-Type") != "application/x-tar" {
		t.Fatalf("backup: %d %s", w.Code, w.Header())
	}
	m, err := store.VerifyBackup(w.Body, store.RestoreOptions{})
	if err != nil || m.HubVersion != "v-test" || !m.Proc || len(m.Runs) != 1 {
		t.Fatalf("backup archive: %+v %v", m, err)
	}
	if w := serve(op, "POST", "/api/backup?proc=maybe", ""); w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "accepted: true or false") {
		t.Errorf("proc=maybe: %d %s", w.Code, w.Body)
	}
}

// TestBackupFailureCutsTheStream: a backup that fails before its first
// byte is an error answer; one that fails after cuts the connection, so
// the client sees a broken stream, never a clean end.
func TestBackupFailureCutsTheStream(t *testing.T) {
	api := &admin.API{}
	broken := errors.New("disk on fire")
	written := false
	api.Backup = func(_ context.Context, w io.Writer, _ store.BackupOptions) error {
		if written {
			w.Write(bytes.Repeat([]byte("x"), 64<<10))
		}
		return broken
	}
	srv := httptest.NewServer(api.HandlerAs(admin.Operator))
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/api/backup", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusInternalServerError || !strings.Contains(string(b), "disk on fire") {
		t.Fatalf("before the first byte: %s %s", resp.Status, b)
	}
	written = true
	resp, err = http.Post(srv.URL+"/api/backup", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := io.ReadAll(resp.Body); err == nil {
		t.Fatalf("after the first byte: the stream ended cleanly (%s)", resp.Status)
	}
}
