package hub

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/a6afc2ce/hermes-hub/executor"
)

// Render turns a verb's outcome into text for people: Markdown with code
// fences (platform escaping happens later, in the sender, after chunking).
// With raw set it returns the result JSON in a json code block.
func Render(verb string, args json.RawMessage, out *executor.Outcome, raw bool) string {
	res := out.JSON()
	if raw {
		var b bytes.Buffer
		if json.Indent(&b, res, "", "  ") != nil {
			b.Reset()
			b.Write(res)
		}
		return Fence(b.String(), "json")
	}
	if !out.Succeeded() {
		return RenderError(out.Err)
	}
	var r map[string]any
	_ = json.Unmarshal(res, &r)
	var a map[string]any
	_ = json.Unmarshal(args, &a)
	str := func(m map[string]any, k string) string { s, _ := m[k].(string); return s }
	num := func(m map[string]any, k string) int64 { f, _ := m[k].(float64); return int64(f) }
	p := str(a, "path")
	switch strings.ToLower(verb) {
	case "fs.exists":
		if r["exists"] == true {
			return fmt.Sprintf("`%s` exists.", p)
		}
		return fmt.Sprintf("`%s` does not exist.", p)
	case "fs.readfile":
		if f, _ := r["file"].(map[string]any); f != nil && f["encoding"] == "base64" {
			size, _ := f["sizeBytes"].(float64)
			return fmt.Sprintf("`%s` is binary (%d bytes); add --json for its content in base64.", p, int64(size))
		}
		return fmt.Sprintf("`%s`%s\n%s", p, versionNote(r), Fence(str(r, "content"), langFor(p)))
	case "fs.readrange":
		return fmt.Sprintf("`%s` lines %d–%d\n%s", p, num(a, "startLine"), num(a, "endLine"), Fence(str(r, "content"), langFor(p)))
	case "fs.linecount":
		n := num(r, "lineCount")
		return fmt.Sprintf("`%s` has %d %s.", p, n, plural(n, "line", "lines"))
	case "fs.listdir":
		return renderListing(p, r)
	case "proc.run":
		return renderProc(a, r)
	case "sys.machineinfo":
		return renderMachine(r)
	case "fs.writefile":
		return fmt.Sprintf("✓ Wrote `%s`%s.", p, versionNote(r))
	case "fs.writerange":
		return fmt.Sprintf("✓ Updated `%s`.", p)
	case "fs.deletefile":
		return fmt.Sprintf("✓ Deleted `%s`.", p)
	case "fs.deletedirectory":
		return fmt.Sprintf("✓ Deleted directory `%s` and everything in it.", p)
	case "fs.createdirectory":
		return fmt.Sprintf("✓ Created directory `%s`.", p)
	case "fs.movefile":
		return fmt.Sprintf("✓ Moved `%s` to `%s`.", str(a, "sourcePath"), str(a, "destinationPath"))
	case "fs.copyfile":
		return fmt.Sprintf("✓ Copied `%s` to `%s`.", str(a, "sourcePath"), str(a, "destinationPath"))
	}
	return renderGeneric(verb, r)
}

// RenderError is one clear line with the error code; a message of several
// lines (usage and schema) follows in a code block.
func RenderError(e *executor.Error) string {
	first, rest, _ := strings.Cut(e.Message, "\n")
	s := fmt.Sprintf("⚠ %s (%s)", first, e.Code)
	if strings.TrimSpace(rest) != "" {
		s += "\n" + Fence(rest, "")
	}
	return s
}

// Fence wraps text in a code fence longer than any backtick run inside it,
// so output containing ``` cannot close the block early.
func Fence(text, lang string) string {
	longest, run := 0, 0
	for i := 0; i < len(text); i++ {
		if text[i] == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	f := strings.Repeat("`", max(3, longest+1))
	text = strings.TrimRight(text, "\n")
	return f + lang + "\n" + text + "\n" + f
}

func renderListing(p string, r map[string]any) string {
	entries, _ := r["entries"].([]any)
	if len(entries) == 0 {
		return fmt.Sprintf("`%s` is empty.", p)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "`%s` (%d %s)\n", p, len(entries), plural(int64(len(entries)), "entry", "entries"))
	for _, e := range entries {
		m, _ := e.(map[string]any)
		name, _ := m["name"].(string)
		if m["isDirectory"] == true {
			fmt.Fprintf(&b, "📁 %s/\n", name)
		} else {
			fmt.Fprintf(&b, "📄 %s\n", name)
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

func renderProc(a, r map[string]any) string {
	exe, _ := a["executable"].(string)
	argv := []string{exe}
	if l, ok := a["arguments"].([]any); ok {
		for _, x := range l {
			s, _ := x.(string)
			if strings.ContainsAny(s, " \t\"'") || s == "" {
				s = fmt.Sprintf("%q", s)
			}
			argv = append(argv, s)
		}
	}
	code, _ := r["exitCode"].(float64)
	dur, _ := r["durationMs"].(float64)
	var b strings.Builder
	status := fmt.Sprintf("exit %d", int(code))
	if r["timedOut"] == true {
		status = "timed out, killed"
	} else if code == 0 {
		status = "exit 0 ✓"
	}
	fmt.Fprintf(&b, "`%s` — %s in %s", strings.Join(argv, " "), status, time.Duration(dur*float64(time.Millisecond)).Round(time.Millisecond))
	for _, s := range []struct{ name, tail, bytes, path string }{{"stdout", "stdoutTail", "stdoutBytes", "stdoutPath"}, {"stderr", "stderrTail", "stderrBytes", "stderrPath"}} {
		tail, _ := r[s.tail].(string)
		n, _ := r[s.bytes].(float64)
		if tail == "" {
			continue
		}
		label := s.name
		if int(n) > len(tail) {
			label = fmt.Sprintf("%s (last %d of %d bytes; all in %v)", s.name, len(tail), int64(n), r[s.path])
		}
		fmt.Fprintf(&b, "\n%s:\n%s", label, Fence(tail, ""))
	}
	if r["stdoutTail"] == "" && r["stderrTail"] == "" {
		b.WriteString("\n(no output)")
	}
	return b.String()
}

func renderMachine(r map[string]any) string {
	var b strings.Builder
	gib := func(v any) string { f, _ := v.(float64); return fmt.Sprintf("%.1f GiB", f/(1<<30)) }
	rows := [][2]string{
		{"host", fmt.Sprint(r["hostname"])},
		{"os", fmt.Sprint(r["operatingSystem"])},
		{"cpus", fmt.Sprint(r["cpuCount"])},
		{"memory", gib(r["totalMemoryBytes"])},
	}
	if up, ok := r["uptimeSeconds"].(float64); ok {
		rows = append(rows, [2]string{"uptime", (time.Duration(up) * time.Second).String()})
	}
	disks, _ := r["disks"].([]any)
	for _, d := range disks {
		m, _ := d.(map[string]any)
		tot, _ := m["totalBytes"].(float64)
		free, _ := m["freeBytes"].(float64)
		pct := 0.0
		if tot > 0 {
			pct = 100 * (tot - free) / tot
		}
		rows = append(rows, [2]string{"disk " + fmt.Sprint(m["name"]), fmt.Sprintf("%s free of %s (%.0f%% used)", gib(free), gib(tot), pct)})
	}
	w := 0
	for _, row := range rows {
		w = max(w, len(row[0]))
	}
	for _, row := range rows {
		fmt.Fprintf(&b, "%-*s  %s\n", w, row[0], row[1])
	}
	return Fence(b.String(), "")
}

// renderGeneric shows any other result as "key: value" lines, with long or
// multi-line strings in code blocks.
func renderGeneric(verb string, r map[string]any) string {
	keys := make([]string, 0, len(r))
	for k := range r {
		if k != "succeeded" && k != "errorMessage" && k != "errorCode" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	if len(keys) == 0 {
		return fmt.Sprintf("✓ %s done.", verb)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "✓ %s", verb)
	for _, k := range keys {
		switch v := r[k].(type) {
		case string:
			if strings.Contains(v, "\n") || len(v) > 80 {
				fmt.Fprintf(&b, "\n%s:\n%s", k, Fence(v, ""))
			} else {
				fmt.Fprintf(&b, "\n%s: %s", k, v)
			}
		case map[string]any, []any:
			j, _ := json.MarshalIndent(v, "", "  ")
			fmt.Fprintf(&b, "\n%s:\n%s", k, Fence(string(j), "json"))
		default:
			j, _ := json.Marshal(v)
			fmt.Fprintf(&b, "\n%s: %s", k, j)
		}
	}
	return b.String()
}

// versionNote is " (version N)" for files of session workspaces.
func versionNote(r map[string]any) string {
	if f, _ := r["file"].(map[string]any); f != nil {
		if v, ok := f["version"].(float64); ok && v > 0 {
			return fmt.Sprintf(" (version %d)", int64(v))
		}
	}
	return ""
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

var langs = map[string]string{
	".go": "go", ".py": "python", ".js": "javascript", ".mjs": "javascript", ".ts": "typescript",
	".json": "json", ".yml": "yaml", ".yaml": "yaml", ".md": "markdown", ".sh": "bash", ".bash": "bash",
	".rs": "rust", ".c": "c", ".h": "c", ".cc": "cpp", ".cpp": "cpp", ".hpp": "cpp", ".java": "java",
	".rb": "ruby", ".html": "html", ".css": "css", ".sql": "sql", ".toml": "toml", ".xml": "xml",
	".ini": "ini", ".dockerfile": "dockerfile", ".kt": "kotlin", ".swift": "swift", ".php": "php",
	".lua": "lua", ".diff": "diff", ".patch": "diff", ".tf": "hcl", ".cs": "csharp",
}

func langFor(p string) string {
	base := path.Base(p)
	switch base {
	case "Makefile", "makefile", "GNUmakefile":
		return "makefile"
	case "Dockerfile":
		return "dockerfile"
	}
	return langs[strings.ToLower(path.Ext(base))]
}
