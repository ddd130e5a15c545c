package admin

import (
	"errors"
	"net/http"

	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/hub"
)

// ScheduleAdmin lists the schedules and runs one now (hub.Scheduler).
type ScheduleAdmin interface {
	List() ([]hub.ScheduleView, error)
	RunNow(name string) (string, error)
}

// scheduleRoutes mounts GET /api/schedules and POST /api/schedules/run.
func (a *API) scheduleRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/schedules", a.need(config.AdminRead, a.listSchedules))
	mux.HandleFunc("POST /api/schedules/run", a.need(config.AdminSchedules, a.runSchedule))
}

func (a *API) listSchedules(w http.ResponseWriter, r *http.Request) {
	if a.Schedules == nil {
		WriteError(w, http.StatusServiceUnavailable, "the schedules are unavailable here")
		return
	}
	vs, err := a.Schedules.List()
	if err != nil {
		WriteError(w, http.StatusInternalServerError, "%v", err)
		return
	}
	WriteJSON(w, http.StatusOK, vs)
}

// RunScheduleRequest is POST /api/schedules/run.
type RunScheduleRequest struct {
	Name string `json:"name"`
}

// RunScheduleResult names the run started: its outcome shows in GET
// /api/schedules once it finishes, and goes to the schedule's targets.
type RunScheduleResult struct {
	Schedule string `json:"schedule"`
	TurnID   string `json:"turn_id"`
}

func (a *API) runSchedule(w http.ResponseWriter, r *http.Request) {
	var req RunScheduleRequest
	if !a.readBody(w, r, &req) {
		return
	}
	if a.Schedules == nil {
		WriteError(w, http.StatusServiceUnavailable, "the schedules are unavailable here")
		return
	}
	turn, err := a.Schedules.RunNow(req.Name)
	switch {
	case errors.Is(err, hub.ErrNoSchedule):
		WriteError(w, http.StatusNotFound, "%v", err)
	case errors.Is(err, hub.ErrNotServing), errors.Is(err, hub.ErrScheduleRunning):
		WriteError(w, http.StatusConflict, "%v", err)
	case err != nil:
		WriteError(w, http.StatusInternalServerError, "%v", err)
	default:
		WriteJSON(w, http.StatusAccepted, RunScheduleResult{Schedule: req.Name, TurnID: turn})
	}
}
