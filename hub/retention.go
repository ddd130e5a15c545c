package hub

import (
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/store"
)

// MirrorRetention is the retention of mirror runs that m sets, per kind
// (mirror.retention, filled in from the older keep_runs and keep_age).
func MirrorRetention(m config.Mirror) store.Retention {
	of := func(r config.RunRetention) store.KindRetention {
		age, runs, bytes, minRuns := r.Values()
		return store.KindRetention{KeepAge: age, KeepRuns: runs, KeepBytes: bytes, MinRuns: minRuns}
	}
	return store.Retention{Serve: of(m.Retention.Serve), CLI: of(m.Retention.CLI)}
}

// MirrorKeys are the configuration keys of mirror retention, which a
// reload applies (RetentionReloadable).
var MirrorKeys = []string{"mirror.retention", "mirror.keep_runs", "mirror.keep_age"}

// RetentionReloadable makes a reload apply mirror retention to the
// runtime's next prune.
func (rt *Runtime) RetentionReloadable() Reloadable {
	return Reloadable{Name: "mirror retention", Keys: MirrorKeys, Apply: func(cfg *config.Config) {
		r := MirrorRetention(cfg.Mirror)
		rt.retention.Store(&r)
	}}
}

// PruneMirrors applies the mirror retention in force to the runs under
// the state's flows directory: with dryRun it only says what would go
// (store.PlanPrune), else it removes it (store.PruneRuns) and logs each
// run removed with why. Runs held open, this hub's own included, stay.
func (rt *Runtime) PruneMirrors(dryRun bool) (store.PrunePlan, error) {
	r := MirrorRetention(rt.Config.Mirror)
	if p := rt.retention.Load(); p != nil {
		r = *p
	}
	flows := rt.State.Flows()
	now := rt.clock.Now()
	if dryRun {
		return store.PlanPrune(flows, r, now)
	}
	done, err := store.PruneRuns(flows, r, now)
	for _, it := range done.Remove {
		rt.log.Info("mirror retention: removed a run", "run", it.ID, "kind", it.Kind, "reason", it.Reason, "why", it.Why)
	}
	return done, err
}
