// Package verbs implements the hub's verbs (fs.*, proc.run, proc.output,
// sys.machineInfo, vfs.*) over the workspace they act in. docs/security.md
// says what they can reach; docs/sessions.md what session workspaces are.
//
// The package is in three rooms:
//
//   - verbs/confine is the confinement: every path a verb receives goes
//     through its one gate (confine.Root.Locate: the lexical guard, links
//     resolved inside the root, then a descent by descriptors that refuses
//     the hub's state directory and its protected files by identity), and
//     every file operation acts relative to the located parent's
//     descriptor. Refusals carry the code forbidden_path.
//   - verbs/proc runs proc.run's programs on the host, under a supervisor
//     that owns their whole process tree, within limits, as the configured
//     user.
//   - this package: the verbs themselves (what a verb does with a file:
//     modes, encodings, lines, listings and their cache, metadata, output
//     files), session workspaces and their snapshots, and the registration
//     of every verb with its schema and rendering.
//
// A Workspace is a confined root with the verbs' limits and its name.
// Verbs get the place they act in from a WorkspaceSource, so a
// per-conversation workspace can be plugged in without touching them;
// *Workspace is a source that always returns itself.
//
// SessionSource is the per-conversation source (docs/sessions.md): a call
// with a session (executor.Call.Session, the chat key or an API caller's
// session) acts in that session's own directory, created on first use and
// preloaded with copies of the configured host mounts; a call without one
// acts in the host workspace. A session owns its workspace: the Place a
// source returns carries both, and the verbs lock the session around their
// work. In session workspaces every file carries a version and creation
// and update times kept in a FileMeta (hub.db in production), and the vfs.*
// verbs take, list and restore snapshots and reset the workspace. In the
// host workspace results carry no versions or times: other programs change
// host files without the hub knowing.
//
// Writes go through a temporary file in the same directory, fsync and
// rename; fs.moveFile and fs.copyFile never replace a file. proc.run runs a
// program without a shell with an allow-listed environment, on the host
// (package proc) or, for a workspace whose destination is elsewhere, by its
// Runner (Options.Runners). AgentMarkdown renders the instructions an agent
// needs to use the registered verbs. Every result type renders itself for
// chat (executor.Renderer, in render.go).
//
// To add a verb: its argument and result types in types.go (the schema is
// derived from them), its method on Set (taking its paths through
// Set.usePath, so through the gate, and acting on them with the located
// path's operations), its line in Set.Register, its rendering in
// render.go, and golden files under testdata/ (schema, render, the agent
// instructions: go test ./verbs/ -run 'Golden|AgentMarkdown' -args -update
// writes them). A verb that takes a path joins the call tables of verbs/confine's
// tests (traversal_test.go, protect_test.go, protectfile_test.go), which
// prove that every such verb is refused the hub's state and secrets.
package verbs
