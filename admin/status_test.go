package admin_test

import (
	"encoding/json"
	"github.com/a6afc2ce/hermes-hub/admin"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/clock"
)

// TestStatusTellsTheRuntimesTime: GET /api/status dates itself and counts
// the uptime by the runtime's clock, says whether the hub runs, and carries
// the runtime's state.
func TestStatusTellsTheRuntimesTime(t *testing.T) {
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clk := clock.NewFake(start)
	ws := t.TempDir()
	rt := openRuntime(t, ws, filepath.Join(ws, ".hub"), clk)
	clk.Advance(90 * time.Second)

	offline := admin.ForRuntime(rt)
	offline.Running = nil
	cases := []struct {
		name    string
		api     http.Handler
		running bool
	}{
		{"running", admin.ForRuntime(rt).Handler(), true},
		{"offline", offline.Handler(), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			tc.api.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/api/status", nil))
			if w.Code != http.StatusOK {
				t.Fatalf("GET /api/status: %d %s", w.Code, w.Body)
			}
			var st struct {
				Time    string `json:"time"`
				Running bool   `json:"running"`
				Uptime  int64  `json:"uptime_s"`
				RunID   string `json:"run_id"`
				Outbox  any    `json:"outbox"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil {
				t.Fatalf("status is not JSON (%v): %s", err, w.Body)
			}
			if want := "2026-03-01T12:01:30Z"; st.Time != want {
				t.Errorf("time %q, want %q", st.Time, want)
			}
			if st.Uptime != 90 {
				t.Errorf("uptime_s %d, want 90", st.Uptime)
			}
			if st.Running != tc.running {
				t.Errorf("running %v, want %v", st.Running, tc.running)
			}
			if st.RunID != rt.RunID || st.RunID == "" || st.Outbox == nil {
				t.Errorf("status lacks the runtime's state: %s", w.Body)
			}
		})
	}
}
