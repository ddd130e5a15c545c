package boltmeta

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/a6afc2ce/hermes-hub/store"
	"github.com/a6afc2ce/hermes-hub/verbs"
)

// fileMetaImpls runs a test against the bbolt store and against the
// in-memory one, so both keep the same contract.
func fileMetaImpls(t *testing.T, f func(t *testing.T, m verbs.FileMeta)) {
	t.Run("bolt", func(t *testing.T) {
		st, err := store.Open(t.TempDir(), store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		fm, err := Open(st.DB())
		if err != nil {
			t.Fatal(err)
		}
		f(t, fm)
	})
	t.Run("memory", func(t *testing.T) { f(t, verbs.NewMemoryMeta()) })
}

func metaAt(p string, v int64, at time.Time) verbs.Meta {
	return verbs.Meta{Path: p, Version: v, Encoding: "utf-8", CreatedAt: at, UpdatedAt: at.Add(time.Duration(v) * time.Second)}
}

// paths lists "path@version" for records.
func paths(ms []verbs.Meta) []string {
	out := []string{}
	for _, m := range ms {
		out = append(out, fmt.Sprintf("%s@%d", m.Path, m.Version))
	}
	return out
}

func TestFileMetaContract(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 678_000_000, time.UTC)
	fileMetaImpls(t, func(t *testing.T, m verbs.FileMeta) {
		const s, other = "chat:telegram:-100:5", "chat:telegram:-100"
		for _, p := range []string{"a", "a/b", "a/b/c", "a.b", "ab/x", "a/bc", "z"} {
			if err := m.Put(s, metaAt(p, 1, at)); err != nil {
				t.Fatal(err)
			}
		}
		// A session whose id is a prefix of another never mixes with it.
		if err := m.Put(other, metaAt("a/b", 7, at)); err != nil {
			t.Fatal(err)
		}
		got, ok, err := m.Get(s, "a/b")
		if err != nil || !ok || got != metaAt("a/b", 1, at) {
			t.Fatalf("get: %+v %v %v", got, ok, err)
		}
		if _, ok, err := m.Get(s, "missing"); ok || err != nil {
			t.Fatalf("get missing: %v %v", ok, err)
		}
		// Sorted by path segment by segment: "a/b" before "a.b".
		all, err := m.List(s, ".")
		if err != nil || !slices.Equal(paths(all), []string{"a@1", "a/b@1", "a/b/c@1", "a/bc@1", "a.b@1", "ab/x@1", "z@1"}) {
			t.Fatalf("list all: %v %v", paths(all), err)
		}
		under, _ := m.List(s, "a")
		if !slices.Equal(paths(under), []string{"a/b@1", "a/b/c@1", "a/bc@1"}) {
			t.Fatalf("list a: %v", paths(under))
		}
		// Deleting directory a/b removes a/b/c only: not a/b itself (a file
		// there is another path), not a/bc.
		n, err := m.DeletePrefix(s, "a/b")
		if err != nil || n != 1 {
			t.Fatalf("delete prefix a/b: %d %v", n, err)
		}
		n, _ = m.DeletePrefix(s, "a")
		if n != 2 {
			t.Fatalf("delete prefix a: %d", n)
		}
		all, _ = m.List(s, ".")
		if !slices.Equal(paths(all), []string{"a@1", "a.b@1", "ab/x@1", "z@1"}) {
			t.Fatalf("after deletes: %v", paths(all))
		}
		if o, _ := m.List(other, "."); !slices.Equal(paths(o), []string{"a/b@7"}) {
			t.Fatalf("other session touched: %v", paths(o))
		}
		// Rename moves the record and replaces the destination's.
		if err := m.Put(s, metaAt("dst", 9, at)); err != nil {
			t.Fatal(err)
		}
		if err := m.Rename(s, "z", "dst"); err != nil {
			t.Fatal(err)
		}
		if got, ok, _ := m.Get(s, "dst"); !ok || got.Version != 1 || got.Path != "dst" {
			t.Fatalf("renamed: %+v %v", got, ok)
		}
		if _, ok, _ := m.Get(s, "z"); ok {
			t.Fatal("rename kept the source")
		}
		if err := m.Rename(s, "none", "dst"); err != nil {
			t.Fatal(err)
		}
		if _, ok, _ := m.Get(s, "dst"); ok {
			t.Fatal("renaming a file without a record kept the destination's stale record")
		}
		if err := m.Delete(s, "a"); err != nil {
			t.Fatal(err)
		}
		if err := m.Delete(s, "never"); err != nil {
			t.Fatal(err)
		}
		// Replace is the whole set; nil drops the session.
		if err := m.Replace(s, []verbs.Meta{metaAt("r/1", 1, at), metaAt("r/2", 2, at)}); err != nil {
			t.Fatal(err)
		}
		if all, _ := m.List(s, "."); !slices.Equal(paths(all), []string{"r/1@1", "r/2@2"}) {
			t.Fatalf("after replace: %v", paths(all))
		}
		if ids, err := m.Sessions(); err != nil || !slices.Equal(ids, []string{other, s}) {
			t.Fatalf("sessions %v %v", ids, err)
		}
		if err := m.Replace(s, nil); err != nil {
			t.Fatal(err)
		}
		if ids, _ := m.Sessions(); !slices.Equal(ids, []string{other}) {
			t.Fatalf("sessions after drop %v", ids)
		}
		// Keys that could mix sessions or paths are refused.
		for _, bad := range []func() error{
			func() error { return m.Put("", metaAt("x", 1, at)) },
			func() error { return m.Put("s\x00x", metaAt("x", 1, at)) },
			func() error { return m.Put(s, metaAt("", 1, at)) },
			func() error { _, _, err := m.Get(s, "a\x00b"); return err },
			func() error { return m.Replace(s, []verbs.Meta{metaAt("", 1, at)}) },
		} {
			if err := bad(); !errors.Is(err, verbs.ErrBadMetaKey) {
				t.Errorf("bad key: %v", err)
			}
		}
	})
}

func TestFileMetaPersistsAndIsVersioned(t *testing.T) {
	dir := t.TempDir()
	at := time.Date(2026, 1, 2, 3, 4, 5, 678_000_000, time.UTC)
	st, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fm, err := Open(st.DB())
	if err != nil {
		t.Fatal(err)
	}
	if err := fm.Put("web", metaAt("notes.md", 3, at)); err != nil {
		t.Fatal(err)
	}
	st.Close()
	st, err = store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	fm, err = Open(st.DB())
	if err != nil {
		t.Fatal(err)
	}
	got, ok, err := fm.Get("web", "notes.md")
	if err != nil || !ok || got != metaAt("notes.md", 3, at) || got.UpdatedAt.Location() != time.UTC {
		t.Fatalf("after reopen: %+v %v %v", got, ok, err)
	}
	// A bucket written by a newer hub is refused, not misread.
	if err := st.DB().Update(func(tx *bolt.Tx) error {
		_, _, err := store.EnsureBucket(tx, FileMetaBucket, fileMetaVersion+1)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(st.DB()); !errors.Is(err, store.ErrSchemaTooNew) {
		t.Fatalf("newer schema: %v", err)
	}
	// A store over a database without the bucket says so.
	other, err := store.Open(filepath.Join(dir, "other"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, _, err := (&FileMetaStore{db: other.DB()}).Get("web", "x"); err == nil {
		t.Fatal("no bucket, no error")
	}
}

func BenchmarkFileMetaPut(b *testing.B) {
	st, err := store.Open(b.TempDir(), store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	fm, err := Open(st.DB())
	if err != nil {
		b.Fatal(err)
	}
	at := time.Now()
	n := 0
	for b.Loop() {
		if err := fm.Put("chat:telegram:1", metaAt(fmt.Sprintf("dir/file%04d", n%1000), int64(n), at)); err != nil {
			b.Fatal(err)
		}
		n++
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "writes/s")
}
