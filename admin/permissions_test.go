package admin_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/a6afc2ce/hermes-hub/admin"
	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/hub/hubtest"
	"github.com/a6afc2ce/hermes-hub/store"
)

// openWithAccess opens a runtime whose web identity holds the roles of
// access (the default configuration's when nil).
func openWithAccess(t *testing.T, access *config.Access) *hub.Runtime {
	t.Helper()
	ws := t.TempDir()
	cfg := hubtest.Config(t, ws, filepath.Join(ws, ".hub"))
	if access != nil {
		cfg.Access = *access
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
	}
	he := hubtest.Open(t, cfg, hubtest.Options{
		Runtime:  hub.RuntimeOptions{Clock: clock.Real{}},
		Register: func(*executor.Registry, *config.Config, *store.State) error { return nil },
	})
	hubtest.NewRecorder().HandleAll(t, he.Runtime)
	he.Start(t)
	return he.Runtime
}

// adminEndpoint is one admin API request and the permission it needs ("":
// any authenticated caller).
type adminEndpoint struct {
	method, path, body string
	perm               string
}

// adminEndpoints are valid requests to every endpoint: with the permission
// they answer anything but 403.
var adminEndpoints = []adminEndpoint{
	{"GET", "/api/status", "", ""},
	{"GET", "/api/whoami", "", ""},
	{"GET", "/api/targets", "", config.AdminRead},
	{"GET", "/api/channels", "", config.AdminRead},
	{"GET", "/api/outbox", "", config.AdminRead},
	{"GET", "/api/outbox/entry?id=pma:x:web:0", "", config.AdminRead},
	{"GET", "/api/mirror?n=5", "", config.AdminRead},
	{"GET", "/api/mirror/search?identity=web", "", config.AdminRead},
	{"GET", "/api/nodes", "", config.AdminRead},
	{"POST", "/api/targets", `{"target":"web"}`, config.AdminTargets},
	{"DELETE", "/api/targets?target=web", "", config.AdminTargets},
	{"POST", "/api/targets/clear", "", config.AdminTargets},
	{"POST", "/api/deliver", `{"text":"posted by whoever may"}`, config.AdminDeliver},
	{"POST", "/api/outbox/retry", `{"id":"pma:x:web:0"}`, config.AdminOutbox},
	{"POST", "/api/outbox/purge", `{}`, config.AdminOutbox},
	{"POST", "/api/channels/rebuild", "", config.AdminChannels},
	{"GET", "/api/schedules", "", config.AdminRead},
	{"POST", "/api/schedules/run", `{"name":"nightly"}`, config.AdminSchedules},
}

func serve(h http.Handler, method, path, body string) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(method, path, strings.NewReader(body)))
	return w
}

// TestAdminPermissionsByRole: each endpoint answers an identity whose roles
// grant its permission and refuses (403, naming the permission) one whose
// roles do not; "*" and the built-in reader grant none; the operator holds
// all; a request without an identity holds none.
func TestAdminPermissionsByRole(t *testing.T) {
	role := func(verbs ...string) *config.Access {
		return &config.Access{Roles: map[string]config.Role{"r": {Verbs: verbs}}, Grants: map[string][]string{"web": {"r"}}}
	}
	all := config.AdminPermissions
	cases := []struct {
		name     string
		access   *config.Access // nil: the default configuration (web: [operator])
		identity string         // "": no identity on the request
		granted  []string
	}{
		{"default config (operator)", nil, "web", all},
		{"configured token, no access section (reader)", &config.Access{Grants: map[string][]string{"web": {"reader"}}}, "web", nil},
		{"every verb", role("*"), "web", nil},
		{"every verb, reader", &config.Access{Roles: map[string]config.Role{"all": {Verbs: []string{"*"}}}, Grants: map[string][]string{"web": {"all", "reader"}}}, "web", nil},
		{"admin.read", role("fs.*", config.AdminRead), "web", []string{config.AdminRead}},
		{"admin.targets", role(config.AdminTargets), "web", []string{config.AdminTargets}},
		{"admin.deliver", role(config.AdminDeliver), "web", []string{config.AdminDeliver}},
		{"admin.outbox", role(config.AdminOutbox), "web", []string{config.AdminOutbox}},
		{"admin.channels", role(config.AdminChannels), "web", []string{config.AdminChannels}},
		{"admin.schedules", role(config.AdminSchedules), "web", []string{config.AdminSchedules}},
		{"admin.*", role("*", "admin.*"), "web", all},
		{"default roles", &config.Access{Roles: map[string]config.Role{"r": {Verbs: []string{"ADMIN.READ"}}}, DefaultRoles: []string{"r"}}, "web", []string{config.AdminRead}},
		{"granted to another identity", &config.Access{Roles: map[string]config.Role{"r": {Verbs: []string{"admin.*"}}}, Grants: map[string][]string{"telegram:1": {"r"}}}, "web", nil},
		{"operator, default config", nil, admin.Operator, all},
		{"no identity, admin.*", role("admin.*"), "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rt := openWithAccess(t, tc.access)
			api := admin.ForRuntime(rt)
			h := api.Handler()
			if tc.identity != "" {
				h = api.HandlerAs(tc.identity)
			}
			for _, ep := range adminEndpoints {
				w := serve(h, ep.method, ep.path, ep.body)
				want := ep.perm == "" || slices.Contains(tc.granted, ep.perm)
				if got := w.Code != http.StatusForbidden; got != want {
					t.Errorf("%s %s: %d %s (permitted: want %v)", ep.method, ep.path, w.Code, w.Body, want)
					continue
				}
				if !want && !strings.Contains(w.Body.String(), ep.perm) {
					t.Errorf("%s %s: the refusal does not name %s: %s", ep.method, ep.path, ep.perm, w.Body)
				}
				if !want && tc.identity != "" && !strings.Contains(w.Body.String(), `verbs: [\"`+ep.perm+`\"]`) {
					t.Errorf("%s %s: the refusal does not give the configuration that allows it: %s", ep.method, ep.path, w.Body)
				}
				if want && w.Code/100 == 5 && w.Code != http.StatusServiceUnavailable {
					t.Errorf("%s %s: %d %s", ep.method, ep.path, w.Code, w.Body)
				}
			}
			var who admin.WhoAmI
			w := serve(h, "GET", "/api/whoami", "")
			if err := json.Unmarshal(w.Body.Bytes(), &who); err != nil {
				t.Fatalf("whoami: %v %s", err, w.Body)
			}
			if want := append([]string{}, tc.granted...); who.Identity != tc.identity || !slices.Equal(who.Permissions, want) {
				t.Errorf("whoami = %+v, want %q with %v", who, tc.identity, want)
			}
		})
	}
}

// TestAdminCountsAreBounded: every count a request names is a whole number
// within its range, refused with the range otherwise; nothing is allocated
// by it.
func TestAdminCountsAreBounded(t *testing.T) {
	rt := openWithAccess(t, nil)
	h := admin.ForRuntime(rt).HandlerAs(admin.Operator)
	cases := []struct {
		path string
		code int
		msg  string
	}{
		{"/api/mirror?n=1000000000", 400, "n must be a whole number from 0 to 10000"},
		{"/api/mirror?n=99999999999999999999999", 400, "n must be a whole number from 0 to 10000"},
		{"/api/mirror?n=-1", 400, "n must be a whole number from 0 to 10000"},
		{"/api/mirror?n=ten", 400, "n must be a whole number from 0 to 10000"},
		{"/api/mirror?n=1e3", 400, "n must be a whole number from 0 to 10000"},
		{"/api/mirror?n=10001", 400, "n must be a whole number from 0 to 10000"},
		{"/api/mirror?n=10000", 200, ""},
		{"/api/mirror?n=0", 200, ""},
		{"/api/mirror", 200, ""},
		{"/api/outbox?limit=1000000000", 400, "limit must be a whole number from 1 to 10000"},
		{"/api/outbox?limit=0", 400, "limit must be a whole number from 1 to 10000"},
		{"/api/outbox?limit=-5", 400, "limit must be a whole number from 1 to 10000"},
		{"/api/outbox?limit=many", 400, "limit must be a whole number from 1 to 10000"},
		{"/api/outbox?state=dead&limit=10000", 200, ""},
		{"/api/outbox?limit=1", 200, ""},
	}
	for _, tc := range cases {
		w := serve(h, "GET", tc.path, "")
		if w.Code != tc.code || !strings.Contains(w.Body.String(), tc.msg) {
			t.Errorf("GET %s: %d %s, want %d %q", tc.path, w.Code, w.Body, tc.code, tc.msg)
		}
	}
}
