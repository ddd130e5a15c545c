package web

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/a6afc2ce/hermes-hub/admin"
	"github.com/a6afc2ce/hermes-hub/config"
)

// TestAdminAPIFollowsTheWebRoles: over HTTP with the bearer token, the
// admin endpoints answer as far as the web identity's roles grant admin
// permissions: with no configuration (web: [reader]) the token reads the
// status and nothing of other conversations, and changes nothing.
func TestAdminAPIFollowsTheWebRoles(t *testing.T) {
	type call struct {
		method, path, body string
		perm               string
	}
	calls := []call{
		{"GET", "/api/status", "", ""},
		{"GET", "/api/mirror?n=5", "", config.AdminRead},
		{"GET", "/api/outbox?state=delivered", "", config.AdminRead},
		{"GET", "/api/outbox/entry?id=pma:x:web:0", "", config.AdminRead},
		{"GET", "/api/channels", "", config.AdminRead},
		{"GET", "/api/targets", "", config.AdminRead},
		{"POST", "/api/targets", `{"target":"chat:telegram:42"}`, config.AdminTargets},
		{"DELETE", "/api/targets?target=chat:telegram:42", "", config.AdminTargets},
		{"POST", "/api/targets/clear", "", config.AdminTargets},
		{"POST", "/api/deliver", `{"text":"arbitrary text from the bot"}`, config.AdminDeliver},
		{"POST", "/api/outbox/retry", `{"id":"pma:x:web:0"}`, config.AdminOutbox},
		{"POST", "/api/outbox/purge", `{}`, config.AdminOutbox},
		{"POST", "/api/channels/rebuild", "", config.AdminChannels},
	}
	cases := []struct {
		name    string
		access  config.Access
		granted []string
	}{
		{"no configuration", config.Default().Access, config.AdminPermissions},
		{"a configured token, no access section", defaultAccessWithToken(), nil},
		{"every verb", config.Access{Roles: map[string]config.Role{"r": {Verbs: []string{"*"}}}, Grants: map[string][]string{"web": {"r"}}}, nil},
		{"read", config.Access{Roles: map[string]config.Role{"r": {Verbs: []string{config.AdminRead}}}, Grants: map[string][]string{"web": {"reader", "r"}}}, []string{config.AdminRead}},
		{"read and deliver", config.Access{Roles: map[string]config.Role{"r": {Verbs: []string{config.AdminRead, config.AdminDeliver}}}, Grants: map[string][]string{"web": {"r"}}}, []string{config.AdminRead, config.AdminDeliver}},
		{"everything", config.Access{Roles: map[string]config.Role{"r": {Verbs: []string{"admin.*"}}}, Grants: map[string][]string{"web": {"r"}}}, config.AdminPermissions},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envConfig{mod: func(c *config.Config) { c.Access = tc.access }})
			for _, c := range calls {
				r := e.authed(c.method, c.path, c.body)
				want := c.perm == "" || slices.Contains(tc.granted, c.perm)
				if got := r.status != http.StatusForbidden; got != want {
					t.Errorf("%s %s: %d %s (permitted: want %v)", c.method, c.path, r.status, r.body, want)
				} else if !want && !strings.Contains(r.errorText(t), c.perm) {
					t.Errorf("%s %s: the refusal does not name %s", c.method, c.path, c.perm)
				}
			}
			var who admin.WhoAmI
			e.authed("GET", "/api/whoami", "").json(t, &who)
			want := append([]string{}, tc.granted...)
			if who.Identity != Identity || !slices.Equal(who.Permissions, want) {
				t.Errorf("whoami = %+v, want %s with %v", who, Identity, want)
			}
			if r := e.do(req{method: "GET", path: "/api/whoami"}); r.status != http.StatusUnauthorized {
				t.Errorf("whoami without the token: %d", r.status)
			}
		})
	}
}

// TestWebCountsAreBounded: a count in a request cannot make the hub
// allocate without bound (GET /api/mirror?n=1000000000 once asked for
// ~200 GB); each is refused with its range.
func TestWebCountsAreBounded(t *testing.T) {
	e := newEnv(t, envConfig{})
	for _, tc := range []struct {
		path string
		code int
		msg  string
	}{
		{"/api/mirror?n=1000000000", 400, "n must be a whole number from 0 to 10000"},
		{"/api/mirror?n=-1", 400, "n must be a whole number from 0 to 10000"},
		{"/api/mirror?n=x", 400, "n must be a whole number from 0 to 10000"},
		{"/api/mirror?n=10000", 200, ""},
		{"/api/outbox?limit=1000000000", 400, "limit must be a whole number from 1 to 10000"},
		{"/api/outbox?limit=-1", 400, "limit must be a whole number from 1 to 10000"},
		{"/api/outbox?limit=200", 200, ""},
	} {
		r := e.authed("GET", tc.path, "")
		if r.status != tc.code || tc.msg != "" && !strings.Contains(r.errorText(t), tc.msg) {
			t.Errorf("GET %s: %d %s, want %d %q", tc.path, r.status, r.body, tc.code, tc.msg)
		}
	}
}

// defaultAccessWithToken is the access of a configuration without an
// access section whose web token is configured: deny by default.
func defaultAccessWithToken() config.Access {
	c := config.Default()
	c.Web.Token, c.Access = config.NewSecret("0123456789abcdef0123"), config.Access{}
	c.ApplyDefaults()
	return c.Access
}
