package discord

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInteractionFileVerbs: fs.edit from its slash options (the simple
// form and a YAML list of edits) answers with a diff block; the tail, the
// description of a file and several files at once answer as chat renders
// them.
func TestInteractionFileVerbs(t *testing.T) {
	e := newEnv(t, envOptions{})
	i := e.interact(adminUser, "fs", sub("edit", str("path", "README.md"), str("old-text", "second line"), str("new-text", "2nd line")))
	orig := e.waitOriginal(i)
	if !strings.Contains(orig.Content, "Edited") || !strings.Contains(orig.Content, "```diff\n") || !strings.Contains(orig.Content, "\n-second line\n+2nd line\n") {
		t.Fatalf("edit answered %q", orig.Content)
	}
	i = e.interact(adminUser, "fs", sub("edit", str("path", "README.md"), str("edits", "[{oldText: '# hello', newText: '# hi'}, {oldText: 2nd, newText: second}]")))
	if orig := e.waitOriginal(i); !strings.Contains(orig.Content, "2 replacements") {
		t.Fatalf("edits answered %q", orig.Content)
	}
	if b, _ := os.ReadFile(filepath.Join(e.ws, "README.md")); string(b) != "# hi\nsecond line\n" {
		t.Fatalf("README.md holds %q", b)
	}
	i = e.interact(adminUser, "fs", sub("read-range", str("path", "README.md"), integer("last-lines", 1)))
	if orig := e.waitOriginal(i); !strings.Contains(orig.Content, "second line") || strings.Contains(orig.Content, "# hi") {
		t.Fatalf("tail answered %q", orig.Content)
	}
	i = e.interact(adminUser, "fs", sub("stat", str("path", "README.md")))
	if orig := e.waitOriginal(i); !strings.Contains(orig.Content, "type      file") || !strings.Contains(orig.Content, "size      17 bytes") {
		t.Fatalf("stat answered %q", orig.Content)
	}
	i = e.interact(readerUser, "fs", sub("read-many", str("paths", "README.md missing.txt")))
	if orig := e.waitOriginal(i); !strings.Contains(orig.Content, "# hi") || !strings.Contains(orig.Content, "`missing.txt`: ⚠ File not found") {
		t.Fatalf("read-many answered %q", orig.Content)
	}
	// A reader may not edit.
	i = e.interact(readerUser, "fs", sub("edit", str("path", "README.md"), str("old-text", "hi"), str("new-text", "pwned")))
	if orig := e.waitOriginal(i); !strings.Contains(orig.Content, "may not run fs.edit") {
		t.Fatalf("a reader's edit answered %q", orig.Content)
	}
}

// TestInteractionLongDiffIsAnAttachment: a diff longer than a few messages
// goes the way long output goes: its head, then the whole as a file.
func TestInteractionLongDiffIsAnAttachment(t *testing.T) {
	e := newEnv(t, envOptions{})
	var b strings.Builder
	for n := 1; n <= 400; n++ {
		fmt.Fprintf(&b, "value %04d = old\n", n)
	}
	if err := os.WriteFile(filepath.Join(e.ws, "settings.txt"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	i := e.interact(adminUser, "fs", sub("edit", str("path", "settings.txt"), str("old-text", "= old"), str("new-text", "= new"), opt{Name: "replace-all", Type: 5, Value: true}))
	e.fake.WaitFor(e.t, "the attachment follow-up", func() bool { return len(e.fake.Followups(i.Token)) >= 1 })
	if orig := e.waitOriginal(i); !strings.Contains(orig.Content, "400 replacements") {
		t.Errorf("head chunk = %q", orig.Content)
	}
	var file []byte
	for _, f := range e.fake.Followups(i.Token)[0].Files {
		file = f
	}
	if !strings.Contains(string(file), "-value 0001 = old\n") || !strings.Contains(string(file), "-value 0400 = old\n+value 0001 = new\n") || !strings.Contains(string(file), "+value 0400 = new") {
		t.Errorf("the attachment does not hold the whole diff (%d bytes)", len(file))
	}
}
