// Package verbs implements the hub's verbs (fs.*, proc.run, sys.machineInfo)
// and the workspace they act in: every path is confined to the workspace root
// through os.Root and the path guards of DESIGN §8.
//
// A Workspace wraps an os.Root. Every path a verb receives goes through one
// guard: CleanPath refuses empty, absolute, backslashed, NUL, non-ASCII and
// control-character paths, "." and ".." segments, more than MaxDepth
// segments and segments over MaxSegment bytes; then symbolic links are
// resolved inside the root (one leading outside is refused), and the path is
// opened from the root's descriptor one element at a time without following
// links, refusing the protected directories (the hub's state) by their
// identity, so a path changed while a verb runs cannot redirect it (see
// protect.go). The deny list is only an early refusal by spelling. Refusals
// carry the code forbidden_path. Writes go through a temporary file in the
// same directory, fsync and rename; fs.moveFile and fs.copyFile never
// replace a file.
//
// Verbs get their workspace from a WorkspaceSource, so a per-conversation
// workspace can be plugged in without touching them; *Workspace is a source
// that always returns itself.
//
// SessionSource is the per-conversation source (seed 002): a call with a
// session (executor.Call.Session, the chat key or an API caller's session)
// acts in that session's own directory, created on first use and preloaded
// with copies of the configured host mounts; a call without one acts in the
// host workspace. In session workspaces every file carries a version and
// creation and update times kept in a FileMeta (hub.db in production), and
// the vfs.* verbs take, list and restore snapshots and reset the workspace.
// In the host workspace results carry no versions or times: other programs
// change host files without the hub knowing. AgentMarkdown renders the
// instructions an agent needs to use the registered verbs. Every result type
// renders itself for chat (executor.Renderer, in render.go).
//
// proc.run runs a program without a shell in its own process group with an
// allow-listed environment; a timeout kills the whole group. The package
// needs a Unix system (process groups, O_NONBLOCK opens).
package verbs
