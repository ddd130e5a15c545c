package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestMirrorTextCap: every record, whatever its direction, keeps at most
// MaxTextBytes of text (cut on a rune boundary), with its full size and
// hash; shorter texts are kept whole and unmarked.
func TestMirrorTextCap(t *testing.T) {
	flows := t.TempDir()
	opts := keepAll
	opts.MaxTextBytes = 1024
	m := openMirror(t, flows, run1, opts)
	long := strings.Repeat("a", 1023) + "€€" // the cap falls inside a rune
	exact := strings.Repeat("b", 1024)
	for _, rec := range []MirrorRecord{in(long), out(long), in(exact)} {
		meta := rec.Meta
		if err := m.Append(context.Background(), rec, true); err != nil {
			t.Fatal(err)
		}
		if meta != nil && meta[MetaTextTruncated] != "" {
			t.Fatal("Append changed the caller's meta")
		}
	}
	sum := sha256.Sum256([]byte(long))
	recs := readAll(t, flows, MirrorFilter{})
	if len(recs) != 3 {
		t.Fatalf("%d records", len(recs))
	}
	for _, r := range recs[:2] {
		if r.Text != strings.Repeat("a", 1023) || !utf8.ValidString(r.Text) || r.TextBytes != len(long) ||
			r.Meta[MetaTextTruncated] != "true" || r.Meta[MetaTextSHA256] != hex.EncodeToString(sum[:]) {
			t.Errorf("%s record: text of %d bytes, text_bytes %d, meta %v", r.Direction, len(r.Text), r.TextBytes, r.Meta)
		}
	}
	if r := recs[2]; r.Text != exact || r.Meta[MetaTextTruncated] != "" || r.Meta[MetaTextSHA256] != "" {
		t.Errorf("a text at the cap was changed: %d bytes, meta %v", len(r.Text), r.Meta)
	}
}
