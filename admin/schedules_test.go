package admin_test

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/admin"
	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/hub/hubtest"
	"github.com/a6afc2ce/hermes-hub/internal/testkit"
	"github.com/a6afc2ce/hermes-hub/store"
)

// TestScheduleEndpoints: GET /api/schedules lists each schedule with its
// next time, identity and roles; POST /api/schedules/run starts a run,
// whose outcome the list shows once it finished; an unknown schedule is
// 404, and a runtime that does not serve runs none (409).
func TestScheduleEndpoints(t *testing.T) {
	ws := t.TempDir()
	cfg := hubtest.Config(t, ws, filepath.Join(ws, ".hub"))
	cfg.Access.Grants["schedule:report"] = []string{"reader"}
	cfg.Schedules = config.Schedules{"report": {Cron: "0 6 * * *", Run: config.ScheduleRun{Verb: "fs.listDir", Arguments: config.Arguments{"path": "."}},
		Deliver: []string{"local:pma/report.jsonl"}}}
	cfg.ApplyDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)
	he := hubtest.Open(t, cfg, hubtest.Options{Runtime: hub.RuntimeOptions{Clock: clock.NewFake(at)}})
	he.Start(t)
	h := admin.ForRuntime(he.Runtime).HandlerAs(admin.Operator)
	list := func() []hub.ScheduleView {
		t.Helper()
		w := serve(h, "GET", "/api/schedules", "")
		var vs []hub.ScheduleView
		if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &vs) != nil {
			t.Fatalf("GET /api/schedules: %d %s", w.Code, w.Body)
		}
		return vs
	}
	vs := list()
	if len(vs) != 1 || vs[0].Name != "report" || vs[0].Identity != "schedule:report" || !vs[0].Next.Equal(at.Add(21*time.Hour)) ||
		strings.Join(vs[0].Roles, ",") != "reader" || !vs[0].Allowed || vs[0].Deliver[0] != "local:pma/report.jsonl" || vs[0].Last != nil {
		t.Fatalf("schedules: %+v", vs)
	}
	w := serve(h, "POST", "/api/schedules/run", `{"name":"report"}`)
	var res admin.RunScheduleResult
	if w.Code != http.StatusAccepted || json.Unmarshal(w.Body.Bytes(), &res) != nil || !strings.HasPrefix(res.TurnID, "schedule.report.manual.") {
		t.Fatalf("POST /api/schedules/run: %d %s", w.Code, w.Body)
	}
	testkit.WaitFor(t, "the run's outcome in the list", func() bool {
		l := list()[0].Last
		return l != nil && l.TurnID == res.TurnID && l.Outcome == store.ScheduleSucceeded
	})
	if w := serve(h, "POST", "/api/schedules/run", `{"name":"nightly"}`); w.Code != http.StatusNotFound || !strings.Contains(w.Body.String(), `no schedule \"nightly\"`) {
		t.Fatalf("an unknown schedule: %d %s", w.Code, w.Body)
	}
	he.Close()

	off := hubtest.Open(t, cfg, hubtest.Options{Runtime: hub.RuntimeOptions{Offline: true}})
	h = admin.ForRuntime(off.Runtime).HandlerAs(admin.Operator)
	if w := serve(h, "POST", "/api/schedules/run", `{"name":"report"}`); w.Code != http.StatusConflict || !strings.Contains(w.Body.String(), "start `hub serve`") {
		t.Fatalf("run without a serving hub: %d %s", w.Code, w.Body)
	}
}
