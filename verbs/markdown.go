package verbs

import (
	"fmt"
	"strings"

	"github.com/a6afc2ce/hermes-hub/executor"
)

// sessionGuidance is the prompt guidance for the virtual filesystem
// (docs/sessions.md), for the hub's verbs. It applies to session
// workspaces.
var sessionGuidance = []string{
	"Your workspace belongs to this conversation alone and starts empty apart from the host mounts the operator configured. Create files with `fs.writeFile` when you need them.",
	"Host mounts are configuration only: no verb imports more host directories during a conversation, and nothing you write reaches the host. Mounted files are copies.",
	"Explore with `fs.listDir` before reading or writing specific files. Listings are shallow, so list the directory you need instead of walking the whole tree, and keep output small.",
	"Fetch contents with `fs.readFile` (or `fs.readRange` for part of a large file, `lastLines` for its end, `fs.readMany` for several files at once) when you need them, and base your edits on the version it returns: every write, appends included, increments a file's version, so a different version means the file changed since you read it.",
	"Apply edits with `fs.edit` (replace an exact passage, which must occur once; `dryRun` shows the diff first), `fs.writeFile` or `fs.writeRange`, keeping them concise. `mode: create` refuses to replace a file, `overwrite` and `append` refuse a missing one. Binary content is written and read as base64 (`encoding: base64`) and should stay small and intentional. Prefer replacing a whole file to many appends unless you are streaming a log.",
	"Take a `vfs.snapshot` before risky changes; `vfs.restore` brings a snapshot back into a fresh directory (the snapshot itself never changes), `vfs.reset` starts over from the mounts, `vfs.info` and `vfs.list` show the workspace and its snapshots. Snapshots and idle workspaces expire.",
	"Clean up obsolete files and directories with `fs.deleteFile` and `fs.deleteDirectory` once your work is done, to keep the workspace and its snapshots small.",
	"Avoid mirroring large repositories or binary assets: the per-write size limit (48,000 characters by default) still applies, and mounts should stay focused.",
}

// hostGuidance applies to the host workspace: the same habits, with real
// files and no snapshots.
var hostGuidance = []string{
	"Your workspace is a directory on the hub's host: what you write changes real files at once, and other programs may change them too. There are no versions or snapshots here.",
	"Explore with `fs.listDir` before reading or writing specific files. Listings are shallow, so list the directory you need instead of walking the whole tree, and keep output small.",
	"Fetch contents with `fs.readFile` (or `fs.readRange` and `fs.lineCount` for large files, `lastLines` for the end of a log, `fs.readMany` for several files at once) before editing, and edit from what you read; `fs.stat` describes a file, its SHA-256 on request.",
	"Apply edits with `fs.edit` to replace an exact passage (it must occur once; `dryRun` shows the diff first, `expectedSha256` refuses a file changed since you read it), `fs.writeRange` for a few lines or `fs.writeFile` for a whole file, keeping them concise. `mode: create` refuses to replace a file, `overwrite` and `append` refuse a missing one. Binary content is written and read as base64 (`encoding: base64`).",
	"Clean up files you created once your work is done.",
	"Avoid copying large trees or binary assets: the per-write size limit (48,000 characters by default) applies.",
}

// AgentMarkdown renders the instructions an agent needs to use the verbs
// in reg: how to work in the workspace (session workspaces when sessions is
// set, the host workspace otherwise), then every verb with its chat usage,
// an envelope example and its schema in the IDL. It is generated from the
// registry, so it lists exactly what is registered, but for the verbs
// only a chat conversation can use (executor.Info.ChatOnly).
func AgentMarkdown(reg *executor.Registry, sessions bool) string {
	var b strings.Builder
	b.WriteString("# Workspace verbs\n\n")
	if sessions {
		b.WriteString("You act in a session workspace: a private directory for this conversation, isolated from the hub's host filesystem, where you can stage edits safely.\n\n")
	} else {
		b.WriteString("You act in the hub's host workspace through verbs. Paths are relative to the workspace root.\n\n")
	}
	b.WriteString("## How to work\n\n")
	guide := hostGuidance
	if sessions {
		guide = sessionGuidance
	}
	for i, g := range guide {
		fmt.Fprintf(&b, "%d. %s\n", i+1, g)
	}
	b.WriteString("\n## Calling a verb\n\n")
	b.WriteString("Send a JSON or YAML envelope `{\"verb\": \"<name>\", \"arguments\": {…}}`, or in chat `/<verb>` with the required arguments in order, `key=value` pairs, or a YAML/JSON object on the following lines. ")
	b.WriteString("Every result carries `succeeded`; a failure carries `errorCode` (" + strings.Join(executor.Codes(), ", ") + ") and `errorMessage`, which says what was wrong and what is accepted. Fields marked `?` are optional.\n\n")
	b.WriteString("Paths are relative to the workspace root (`.` is the root), separated by `/`, in printable ASCII, without `.` or `..` segments, at most 16 segments of at most 80 characters each; repeated slashes are collapsed.\n")
	b.WriteString("\n## Verbs\n")
	for _, s := range reg.Schemas() {
		if s.ChatOnly {
			continue // files through a chat: an agent has none
		}
		fmt.Fprintf(&b, "\n### %s\n\n%s", s.Name, s.Summary)
		if s.ReadOnly {
			b.WriteString(" (read-only)")
		}
		b.WriteString(".\n\n")
		fmt.Fprintf(&b, "Chat: `%s`\n\n", s.Usage())
		fmt.Fprintf(&b, "Envelope: `%s`\n\n", envelopeExample(s))
		b.WriteString("```\n" + s.IDL + "```\n")
	}
	return b.String()
}

// envelopeExample shows the envelope with the required and positional
// arguments as placeholders of their types.
func envelopeExample(s executor.VerbSchema) string {
	var args []string
	for _, f := range s.Arguments.Fields {
		if !f.Required && !f.Positional {
			continue
		}
		v := `"<` + f.Name + `>"`
		switch f.Kind {
		case executor.KindInt, executor.KindNumber:
			v = "1"
		case executor.KindBool:
			v = "true"
		case executor.KindList:
			v = "[]"
		}
		args = append(args, fmt.Sprintf("%q: %s", f.Name, v))
	}
	return fmt.Sprintf(`{"verb": %q, "arguments": {%s}}`, s.Name, strings.Join(args, ", "))
}
