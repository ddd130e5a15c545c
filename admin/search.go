package admin

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/store"
)

// searchFlushEvery is how many turns GET /api/mirror/search writes between
// flushes of the stream.
const searchFlushEvery = 64

// searchMirror is GET /api/mirror/search: the turns of every retained run
// that the query's filters select (identity, chat, verb, workspace,
// outcome, since, until, limit), one JSON object per line, as they are
// found. A failure after the first line ends the stream with a line
// {"error": …}.
func (a *API) searchMirror(w http.ResponseWriter, r *http.Request) {
	q, err := a.auditQuery(r)
	if err != nil {
		WriteError(w, http.StatusBadRequest, "%v", err)
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	rc := http.NewResponseController(w)
	n := 0
	err = store.SearchMirrors(r.Context(), a.State.Flows(), q, func(t store.AuditTurn) error {
		// Each write has its own deadline, as GET /api/mirror?follow=1's.
		_ = rc.SetWriteDeadline(clock.Real{}.Now().Add(followWriteTimeout))
		if err := enc.Encode(t); err != nil {
			return err
		}
		if n++; n%searchFlushEvery == 0 {
			return rc.Flush()
		}
		return nil
	})
	if err != nil && r.Context().Err() == nil {
		_ = enc.Encode(APIError{Error: err.Error()})
	}
	_ = rc.Flush()
}

// auditQuery reads the filters of a search from r's query.
func (a *API) auditQuery(r *http.Request) (store.AuditQuery, error) {
	v := r.URL.Query()
	q := store.AuditQuery{Identity: v.Get("identity"), Chat: v.Get("chat"), Verb: v.Get("verb"), Workspace: v.Get("workspace"), Outcome: v.Get("outcome")}
	now := a.clock().Now()
	var err error
	if q.Since, err = ParseSearchTime("since", v.Get("since"), now); err != nil {
		return q, err
	}
	if q.Until, err = ParseSearchTime("until", v.Get("until"), now); err != nil {
		return q, err
	}
	if s := v.Get("limit"); s != "" {
		if q.Limit, err = strconv.Atoi(s); err != nil || q.Limit < 0 {
			return q, fmt.Errorf("limit must be a whole number, 0 for all (got %q)", truncate(s, 32))
		}
	}
	return q, q.Check()
}

// searchTimeAccepted says what since and until accept.
const searchTimeAccepted = "a time such as 2026-11-24T06:00:00Z or 2026-11-24T07:00:00+01:00, a date (2026-11-24) or a date and time (2026-11-24 06:00) in the hub's local time, or a duration ago such as 90m, 24h or 7d"

// ParseSearchTime reads the time a search's since or until names ("" is
// none): RFC 3339, a local date or date and time, or a duration before
// now.
func ParseSearchTime(name, s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	for _, layout := range []string{"2006-01-02", "2006-01-02 15:04", "2006-01-02T15:04", "2006-01-02 15:04:05", "2006-01-02T15:04:05"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, nil
		}
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		if n, err := strconv.Atoi(days); err == nil && n >= 0 {
			return now.AddDate(0, 0, -n), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("%s %q is not a time (accepted: %s)", name, truncate(s, 64), searchTimeAccepted)
}

func (a *API) clock() clock.Clock {
	if a.Clock == nil {
		return clock.Real{}
	}
	return a.Clock
}
