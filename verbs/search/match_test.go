package search

import (
	"bytes"
	"testing"
)

// lower lowers exactly the ASCII letters, whatever their place in a word.
func TestLower(t *testing.T) {
	var all []byte
	for c := range 256 {
		all = append(all, byte(c))
	}
	for off := range 9 {
		src := append(bytes.Repeat([]byte{'Q'}, off), all...)
		got := lower(nil, src)
		for i, c := range src {
			want := c
			if c >= 'A' && c <= 'Z' {
				want = c + 32
			}
			if got[i] != want {
				t.Fatalf("offset %d: lower(%#x) = %#x, want %#x", off, c, got[i], want)
			}
		}
	}
}
