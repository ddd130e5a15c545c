package admin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/admin"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/workspaces/policy"
)

// fakeWorkspaces is a WorkspaceAdmin with one local and one docker
// workspace; it records the resets it was asked for.
type fakeWorkspaces struct {
	resets []string
}

func (f *fakeWorkspaces) Workspaces(context.Context) []admin.WorkspaceView {
	return []admin.WorkspaceView{
		{Name: "default", Path: "/w", Kind: "local", Destination: "local (host processes in /w)", Roles: []string{"reader"}},
		{Name: "box", Path: "/w", Kind: "docker", Destination: "docker image=busybox", Roles: []string{"ops"},
			Containers: []admin.ContainerView{{ID: "abc", Session: "", State: "running", Created: time.Unix(1, 0).UTC()}}},
	}
}

func (f *fakeWorkspaces) Effective(key string) (policy.Resolution, error) {
	if key == "chat:telegram:9" {
		return policy.Resolution{}, fmt.Errorf("this conversation's workspace choice cannot be read (disk)")
	}
	return policy.Resolution{Name: "box", Destination: "docker image=busybox", Reason: fmt.Sprintf("workspaces.by_chat[%q]", key)}, nil
}

func (f *fakeWorkspaces) Reset(_ context.Context, name, session string) error {
	switch name {
	case "default":
		return fmt.Errorf("%w: workspace default runs locally", admin.ErrNoSandbox)
	case "box":
		f.resets = append(f.resets, name+"/"+session)
		return nil
	}
	return fmt.Errorf("%w: workspace %q is not configured", admin.ErrUnknownWorkspace, name)
}

func TestWorkspaceEndpoints(t *testing.T) {
	fake := &fakeWorkspaces{}
	perms := map[string][]string{"reader": {config.AdminRead}, "resetter": {config.AdminRead, config.AdminWorkspaces}}
	api := &admin.API{Workspaces: fake, Allowed: func(id, perm string) bool {
		for _, p := range perms[id] {
			if p == perm {
				return true
			}
		}
		return false
	}}
	for _, c := range []struct {
		name, who, method, path string
		code                    int
		want                    string
	}{
		{"list", "reader", "GET", "/api/workspaces", 200, `"containers":[{"id":"abc","session":"","state":"running","created":"1970-01-01T00:00:01Z"}]`},
		{"list needs admin.read", "nobody", "GET", "/api/workspaces", 403, "grants admin.read"},
		{"effective default web", "reader", "GET", "/api/workspaces/effective", 200, `"chat":"web","name":"box","destination":"docker image=busybox","reason":"workspaces.by_chat[\"web\"]"`},
		{"effective of a chat", "reader", "GET", "/api/workspaces/effective?chat=chat:telegram:7", 200, `"reason":"workspaces.by_chat[\"chat:telegram:7\"]"`},
		{"effective bad key", "reader", "GET", "/api/workspaces/effective?chat=nonsense", 400, `chat \"nonsense\" is not a chat key`},
		{"effective unreadable", "reader", "GET", "/api/workspaces/effective?chat=chat:telegram:9", 409, "cannot be read"},
		{"effective needs admin.read", "nobody", "GET", "/api/workspaces/effective", 403, "grants admin.read"},
		{"reset needs admin.workspaces", "reader", "POST", "/api/workspaces/box/reset", 403, "grants admin.workspaces"},
		{"reset", "resetter", "POST", "/api/workspaces/box/reset", 200, `"removed":"every sandbox"`},
		{"reset a session", "resetter", "POST", "/api/workspaces/box/reset?session=chat:telegram:7", 200, `"removed":"the sandbox of session chat:telegram:7"`},
		{"reset a bad session", "resetter", "POST", "/api/workspaces/box/reset?session=a%20b", 400, "is not a session id"},
		{"reset local", "resetter", "POST", "/api/workspaces/default/reset", 409, "runs locally"},
		{"reset unknown", "resetter", "POST", "/api/workspaces/nope/reset", 404, "is not configured"},
		{"reset bad name", "resetter", "POST", "/api/workspaces/Bad!/reset", 400, "is not a workspace name"},
		{"operator", admin.Operator, "POST", "/api/workspaces/box/reset", 200, `"workspace":"box"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			api.HandlerAs(c.who).ServeHTTP(w, httptest.NewRequest(c.method, c.path, nil))
			if w.Code != c.code || !strings.Contains(w.Body.String(), c.want) {
				t.Fatalf("%s %s as %s: %d %s; want %d with %s", c.method, c.path, c.who, w.Code, w.Body, c.code, c.want)
			}
		})
	}
	if got := strings.Join(fake.resets, ","); got != "box/,box/chat:telegram:7,box/" {
		t.Fatalf("resets: %s", got)
	}
}

func TestWorkspaceEndpointsUnavailable(t *testing.T) {
	api := &admin.API{}
	w := httptest.NewRecorder()
	api.HandlerAs(admin.Operator).ServeHTTP(w, httptest.NewRequest("GET", "/api/workspaces", nil))
	var e admin.APIError
	if w.Code != http.StatusServiceUnavailable || json.Unmarshal(w.Body.Bytes(), &e) != nil || !strings.Contains(e.Error, "served by a running hub") {
		t.Fatalf("no workspaces: %d %s", w.Code, w.Body)
	}
}
