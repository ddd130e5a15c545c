package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"reflect"
	"strings"
	"testing"
	"time"
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

// TestMirrorBytesAsText: a record whose text is given as Bytes is written
// as the same record with that text in Text: kept whole up to the cap,
// cut on a rune boundary past it with its full size and hash, its preview
// taken from the start (multi-byte runes, line ends and more than the
// preview holds), and an empty text left empty.
func TestMirrorBytesAsText(t *testing.T) {
	texts := []string{
		"",
		"short",
		strings.Repeat("b", 1024),
		strings.Repeat("a", 1023) + "€€",
		strings.Repeat("€\r\n", PreviewRunes) + strings.Repeat("x", 4096),
		strings.Repeat("😀", 2*PreviewRunes),
	}
	for i, text := range texts {
		opts := keepAll
		opts.MaxTextBytes = 1024
		asText, asBytes := t.TempDir(), t.TempDir()
		mt, mb := openMirror(t, asText, run1, opts), openMirror(t, asBytes, run1, opts)
		rt, rb := out(text), out("")
		rb.Bytes = []byte(text)
		if err := mt.Append(context.Background(), rt, true); err != nil {
			t.Fatal(err)
		}
		if err := mb.Append(context.Background(), rb, true); err != nil {
			t.Fatal(err)
		}
		got, want := readAll(t, asBytes, MirrorFilter{}), readAll(t, asText, MirrorFilter{})
		if len(got) != 1 || len(want) != 1 {
			t.Fatalf("text %d: %d and %d records", i, len(got), len(want))
		}
		g, w := got[0], want[0]
		g.TS, w.TS = time.Time{}, time.Time{}
		if !reflect.DeepEqual(g, w) {
			t.Errorf("text %d (%d bytes): from Bytes\n%+v\nfrom Text\n%+v", i, len(text), g, w)
		}
	}
}
