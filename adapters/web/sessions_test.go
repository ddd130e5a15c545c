package web

import (
	"net/http"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/config"
)

// TestLogoutSurvivesRestart: a logged-out cookie stays refused after the
// hub restarts on the same state; a cookie that was not logged out still
// works after a restart with the same token, and stops working after a
// restart with another token, even once the old token comes back.
func TestLogoutSurvivesRestart(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	clk := fakeClock()
	start := func(token string) *testEnv {
		clk.Advance(time.Minute) // restarts take time
		return newEnv(t, envConfig{workspace: ws, state: state,
			mod:  func(c *config.Config) { c.Web.Token = config.NewSecret(token) },
			opts: func(o *Options) { o.Clock = clock.Clock(clk) }})
	}
	status := func(e *testEnv, c *http.Cookie) int {
		return e.do(req{method: "GET", path: "/api/status", cookie: c}).status
	}
	const tokenA, tokenB = "token-a-0123456789abcdef", "token-b-0123456789abcdef"

	e := start(tokenA)
	out, kept := e.login(t), e.login(t)
	if r := e.do(req{method: "POST", path: "/api/logout", cookie: out, origin: e.ts.URL}); r.status != http.StatusOK {
		t.Fatalf("logout: %d %s", r.status, r.body)
	}
	e.close()

	e = start(tokenA)
	if got := status(e, out); got != http.StatusUnauthorized {
		t.Fatalf("logged-out cookie after a restart: %d, want 401", got)
	}
	if got := status(e, kept); got != http.StatusOK {
		t.Fatalf("a live cookie after a restart with the same token: %d, want 200", got)
	}
	e.close()

	e = start(tokenB)
	if got := status(e, kept); got != http.StatusUnauthorized {
		t.Fatalf("cookie of the old token after a token change: %d, want 401", got)
	}
	fresh := e.login(t)
	if got := status(e, fresh); got != http.StatusOK {
		t.Fatalf("a cookie issued under the new token: %d", got)
	}
	e.close()

	e = start(tokenA) // the old token comes back
	if got := status(e, kept); got != http.StatusUnauthorized {
		t.Fatalf("cookie issued before a rotation, once the old token is back: %d, want 401", got)
	}
	if got := status(e, e.login(t)); got != http.StatusOK {
		t.Fatal("login after the rotation back does not work")
	}
}
