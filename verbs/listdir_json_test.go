package verbs_test

import (
	"bytes"
	"testing"

	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/verbs"
)

// TestListDirAppendJSON: FsListDirResult.AppendJSON writes encoding/json's
// bytes for odd names, the session fields and failures.
func TestListDirAppendJSON(t *testing.T) {
	zero, neg, big := int64(0), int64(-7), int64(1<<62)
	odd := []string{"", "plain", "a\"b\\c", "ctl\x00\x01\x1f\x7f", "\b\f\n\r\t", "<html>&amp;", "bad\xff\xfe utf8\xc3", "\u2028\u2029 line seps", "é ü 世界 🎉", "\xed\xa0\x80 surrogate"}
	var many []verbs.DirEntry
	for i, n := range odd {
		many = append(many, verbs.DirEntry{Name: n, IsDirectory: i%2 == 0})
	}
	for name, r := range map[string]verbs.FsListDirResult{
		"nil entries":   {Result: executor.Result{Succeeded: true}},
		"empty entries": {Result: executor.Result{Succeeded: true}, Entries: []verbs.DirEntry{}},
		"failure":       {Result: executor.Result{ErrorMessage: "Directory not found: <x> \"y\"", ErrorCode: executor.CodeNotFound}},
		"odd names":     {Result: executor.Result{Succeeded: true}, Entries: many},
		"session": {Result: executor.Result{Succeeded: true}, Entries: []verbs.DirEntry{
			{Name: "d", IsDirectory: true},
			{Name: "zero", SizeBytes: &zero},
			{Name: "neg", SizeBytes: &neg, Version: -1, UpdatedAt: "2026-11-24T10:00:00.000Z"},
			{Name: "big", SizeBytes: &big, Version: 1 << 40, UpdatedAt: "odd\u2028\xff<"},
			{Name: "version only", Version: 3},
			{Name: "time only", UpdatedAt: "t"},
		}},
	} {
		got := r.AppendJSON(nil)
		if want := encodingJSON(t, &r); !bytes.Equal(got, want) {
			t.Errorf("%s: AppendJSON =\n%s\nencoding/json:\n%s", name, got, want)
		}
		if got := r.AppendJSON([]byte("prefix")); !bytes.Equal(got, append([]byte("prefix"), encodingJSON(t, &r)...)) {
			t.Errorf("%s: AppendJSON does not append to what dst holds: %s", name, got)
		}
		o := executor.Outcome{Value: &r}
		if got, want := o.JSON(), encodingJSON(t, &r); !bytes.Equal(got, want) {
			t.Errorf("%s: Outcome.JSON =\n%s\nencoding/json:\n%s", name, got, want)
		}
	}
}

// FuzzListDirAppendJSON: AppendJSON writes encoding/json's bytes for any
// names and session fields.
func FuzzListDirAppendJSON(f *testing.F) {
	f.Add("a", "b\xff", true, false, int64(0), int64(0), "", "")
	f.Add("\u2028", "<&>", false, true, int64(12), int64(3), "2026-11-24T10:00:00.000Z", "msg \x01")
	f.Add("", "\"\\", true, true, int64(-1), int64(-9), "\x00", "")
	f.Fuzz(func(t *testing.T, n1, n2 string, dir, sized bool, size, version int64, updated, msg string) {
		r := verbs.FsListDirResult{Result: executor.Result{Succeeded: msg == "", ErrorMessage: msg}}
		r.Entries = []verbs.DirEntry{{Name: n1, IsDirectory: dir}, {Name: n2, Version: version, UpdatedAt: updated}}
		if sized {
			r.Entries[1].SizeBytes = &size
		}
		if got, want := r.AppendJSON(nil), encodingJSON(t, &r); !bytes.Equal(got, want) {
			t.Fatalf("AppendJSON =\n%s\nencoding/json:\n%s", got, want)
		}
	})
}
