package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/a6afc2ce/hermes-hub/admin"
	"github.com/a6afc2ce/hermes-hub/store"
)

const mirrorPruneUsage = `hub mirror prune [--dry-run] [--json]

Removes the mirror runs (<state>/flows/<run_id>/) that mirror.retention lets
go, each kind of run on its own: the runs of hub serve (the chat history)
and those of CLI calls. A run goes when it started longer ago than keep_age,
or is beyond keep_runs or keep_bytes of its kind (oldest first), except the
newest min_runs of its kind and every run a process still has open.
--dry-run lists what would go and why, and changes nothing. Goes through
the running hub when there is one (its configuration as last reloaded),
else works on the state directory (hub serve also prunes when it starts).`

func runMirrorPrune(env *cliEnv, args []string) error {
	var dryRun, asJSON *bool
	return withAdmin(env, "mirror prune", mirrorPruneUsage, args, func(f *flagSet) {
		dryRun = f.Bool("dry-run", false, "list what would be removed, and why, without removing it")
		asJSON = f.Bool("json", false, "print JSON")
	}, func(c *adminClient, pos []string) error {
		if len(pos) > 0 {
			return usagef("unexpected argument %q", pos[0])
		}
		method := "POST"
		if *dryRun {
			method = "GET"
		}
		var v admin.PruneView
		if err := c.do(method, "/api/mirror/prune", nil, nil, &v); err != nil {
			return err
		}
		if *asJSON {
			printJSON(env.stdout, v)
			return nil
		}
		return printPrune(env.stdout, v)
	})
}

// printPrune lists what goes (or would go), with why, then each kind's
// runs and what stays of them.
func printPrune(w io.Writer, v admin.PruneView) error {
	verb := "Removed"
	if v.DryRun {
		verb = "Would remove"
	}
	var total int64
	for _, it := range v.Remove {
		total += it.Bytes
	}
	if len(v.Remove) == 0 {
		fmt.Fprintf(w, "%s nothing.\n", verb)
	} else {
		fmt.Fprintf(w, "%s %d %s (%s):\n", verb, len(v.Remove), plural(len(v.Remove), "run", "runs"), humanBytes(total))
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		for _, it := range v.Remove {
			kind := string(it.Kind)
			if kind == "" {
				kind = "-"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s: %s\n", it.ID, kind, humanBytes(it.Bytes), it.Reason, it.Why)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	gone := map[string]bool{}
	for _, it := range v.Remove {
		gone[it.ID] = true
	}
	for _, kind := range store.RunKinds {
		var n, open, left int
		var bytes int64
		for _, ri := range v.Runs {
			if ri.Kind != kind {
				continue
			}
			n++
			bytes += ri.Bytes
			if ri.Live {
				open++
			}
			if !gone[ri.ID] {
				left++
			}
		}
		fmt.Fprintf(w, "%s runs: %d (%d open), %s; %d %s\n", kind, n, open, humanBytes(bytes), left, map[bool]string{true: "would stay", false: "stay"}[v.DryRun])
	}
	return nil
}

// humanBytes shows a size in B, KiB, MiB or GiB.
func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
