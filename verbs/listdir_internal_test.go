package verbs

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestSortNames compares sortNames with slices.Sort on names sharing long
// prefixes, of different lengths, with duplicates, unicode and any bytes.
func TestSortNames(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	gens := map[string]func(i int) string{
		"numbered": func(i int) string { return fmt.Sprintf("entry-%05d", r.IntN(20000)) },
		"prefixes": func(i int) string { return strings.Repeat("a", r.IntN(6)) + strings.Repeat("b", r.IntN(3)) },
		"unicode":  func(i int) string { return string([]rune{rune(0x7f + r.IntN(300)), rune('a' + r.IntN(3))}) },
		"any bytes": func(i int) string {
			b := make([]byte, r.IntN(5))
			for j := range b {
				b[j] = byte(r.UintN(256))
			}
			return string(b)
		},
		"long equal": func(i int) string { return strings.Repeat("x", 100) + string(rune('a'+i%3)) },
		"empty":      func(i int) string { return "" },
	}
	for name, gen := range gens {
		for _, n := range []int{0, 1, 47, 48, 49, 200, 5000} {
			names := make([]string, n)
			for i := range names {
				names[i] = gen(i)
			}
			want := slices.Clone(names)
			slices.Sort(want)
			sortNames(names)
			if !slices.Equal(names, want) {
				t.Fatalf("%s, %d names: sortNames differs from slices.Sort", name, n)
			}
		}
	}
}

// FuzzSortNames: sortNames orders any names as slices.Sort does.
func FuzzSortNames(f *testing.F) {
	f.Add([]byte("b\na\nab\n\naa\nb"), uint8(60))
	f.Fuzz(func(t *testing.T, data []byte, copies uint8) {
		base := strings.Split(string(data), "\n")
		var names []string
		for i := 0; i < int(copies)%100+1; i++ {
			for j, s := range base {
				names = append(names, s+string(rune('a'+(i*7+j)%5)))
			}
		}
		want := slices.Clone(names)
		slices.Sort(want)
		sortNames(names)
		if !slices.Equal(names, want) {
			t.Fatalf("sortNames(%q) differs from slices.Sort", names)
		}
	})
}
