package workspaces

import "github.com/a6afc2ce/hermes-hub/executor"

// remoteError refuses to act in a remote workspace on this machine: the
// hub sends its calls to the node (hub serve), nothing else runs them.
func remoteError(e *entry) error {
	return executor.Errorf(executor.CodeForbidden,
		"Workspace %s runs on node %s: only the hub (hub serve) sends calls there; this command runs verbs on this machine only", e.name, e.cfg.Destination.Node)
}
