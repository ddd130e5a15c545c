package verbs_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a6afc2ce/hermes-hub/verbs"
)

// BenchmarkEdit replaces one line in the middle of a 100 KB file of 1,724
// lines, in process, with a text of its own each time: read, match, diff,
// write a temporary file, sync it, rename it over the file, sync the
// directory. The dry run is the same without the write: what is left is
// the cost of the sync and rename.
func BenchmarkEdit(b *testing.B) {
	var sb strings.Builder
	for n := 1; n <= 1724; n++ {
		fmt.Fprintf(&sb, "line %07d: the quick brown fox jumps over the lazy dog\n", n)
	}
	for _, dry := range []bool{false, true} {
		name := "durable"
		if dry {
			name = "dryRun"
		}
		b.Run(name, func(b *testing.B) {
			dir := b.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "edit.txt"), []byte(sb.String()), 0o644); err != nil {
				b.Fatal(err)
			}
			s := dirSet(b, dir)
			cur := "line 0000862: the quick brown fox jumps over the lazy dog"
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				next := fmt.Sprintf("state after edit %d", i)
				r, err := s.Edit(context.Background(), verbs.FsEditArgs{Path: "edit.txt", OldText: cur, NewText: &next, DryRun: dry})
				if err != nil || r.Replacements != 1 || !strings.Contains(r.Diff, "+"+next) {
					b.Fatalf("%+v %v", r, err)
				}
				if !dry {
					cur = next
				}
			}
		})
	}
}
