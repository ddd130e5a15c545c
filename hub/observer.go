package hub

import "github.com/a6afc2ce/hermes-hub/executor"

// Observer hears what the hub did, for operators' metrics. The hub calls it
// from every adapter's goroutines, so implementations must be quick and safe
// for concurrent use. A nil Observer in Options hears nothing.
type Observer interface {
	// Turn: a turn from surface (telegram, discord, web; api for Execute)
	// ended with status, or with StatusError when it failed.
	Turn(surface string, status Status)
	// Verb: a verb call ran (out.Verb is empty for an unknown verb).
	Verb(out *executor.Outcome)
}

// StatusError is the status an Observer hears for a turn that failed (its
// error was returned to the adapter); Handle never returns it.
const StatusError Status = "error"

// SurfaceAPI is the surface of the turns Execute runs, for an Observer.
const SurfaceAPI = "api"

func (h *Hub) observeTurn(surface string, res *TurnResult, err error) {
	if h.opts.Observer == nil {
		return
	}
	st := StatusError
	if err == nil && res != nil {
		st = res.Status
	}
	h.opts.Observer.Turn(surface, st)
}
