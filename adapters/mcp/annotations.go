package mcp

import (
	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// hints are a verb's MCP tool annotations beyond readOnlyHint, which comes
// from the registry (executor.Info.ReadOnly).
type hints struct {
	// destructive: the verb may delete or overwrite what was there.
	destructive bool
	// idempotent: calling it again with the same arguments has no further
	// effect (a second delete finds nothing and fails; a second copy finds
	// the target and fails).
	idempotent bool
	// openWorld: the verb reaches beyond the workspace (proc.run runs any
	// program the hub may run).
	openWorld bool
}

// verbHints is the one table of the verbs' annotations. A verb missing
// here (registered later, say) gets unknownHints, the cautious answer.
var verbHints = map[string]hints{
	"fs.exists":          {idempotent: true},
	"fs.readFile":        {idempotent: true},
	"fs.readRange":       {idempotent: true},
	"fs.readMany":        {idempotent: true},
	"fs.stat":            {idempotent: true},
	"fs.edit":            {destructive: true}, // replaces text; with replaceAll or a newText holding oldText, again on every call
	"fs.lineCount":       {idempotent: true},
	"fs.listDir":         {idempotent: true},
	"fs.search":          {idempotent: true},
	"fs.find":            {idempotent: true},
	"fs.watch":           {idempotent: true},
	"fs.writeFile":       {destructive: true}, // overwrite replaces; append grows on every call
	"fs.writeRange":      {destructive: true}, // replaces lines; inserts again on every call
	"fs.deleteFile":      {destructive: true, idempotent: true},
	"fs.moveFile":        {destructive: true}, // the source is gone; a second move fails differently
	"fs.copyFile":        {idempotent: true},  // the target must not exist
	"fs.createDirectory": {idempotent: true},  // existing directories are fine
	"fs.deleteDirectory": {destructive: true, idempotent: true},
	"proc.run":           {destructive: true, openWorld: true},
	"proc.output":        {idempotent: true}, // reads a finished call's output
	"sys.machineInfo":    {idempotent: true},
	"vfs.snapshot":       {}, // adds a snapshot per call, removes nothing
	"vfs.restore":        {destructive: true, idempotent: true},
	"vfs.reset":          {destructive: true, idempotent: true},
	"vfs.info":           {idempotent: true},
	"vfs.list":           {idempotent: true},
}

var unknownHints = hints{destructive: true, openWorld: true}

// annotations returns the tool annotations of a verb.
func annotations(info executor.Info) *mcp.ToolAnnotations {
	h, ok := verbHints[info.Name]
	if !ok {
		h = unknownHints
	}
	return &mcp.ToolAnnotations{
		Title:           info.Name,
		ReadOnlyHint:    info.ReadOnly,
		DestructiveHint: &h.destructive,
		IdempotentHint:  h.idempotent,
		OpenWorldHint:   &h.openWorld,
	}
}
