package verbs

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// countingReader counts the reads made of it.
type countingReader struct {
	r     io.Reader
	reads int
}

func (c *countingReader) Read(p []byte) (int, error) {
	c.reads++
	return c.r.Read(p)
}

func TestReadUpTo(t *testing.T) {
	text := strings.Repeat("0123456789", 400) // 4,000 bytes
	tests := []struct {
		name       string
		r          func() io.Reader
		size, most int64
		want       string
		maxReads   int // 0: any
	}{
		{"the size as stated: one read and one for the end", func() io.Reader { return strings.NewReader(text) }, 4000, 1 << 20, text, 2},
		{"empty", func() io.Reader { return strings.NewReader("") }, 0, 1 << 20, "", 1},
		{"grew after the stat", func() io.Reader { return strings.NewReader(text) }, 10, 1 << 20, text, 0},
		{"shrank after the stat", func() io.Reader { return strings.NewReader(text[:100]) }, 4000, 1 << 20, text[:100], 0},
		{"short reads", func() io.Reader { return iotest.OneByteReader(strings.NewReader(text)) }, 4000, 1 << 20, text, 0},
		{"stops at most", func() io.Reader { return strings.NewReader(text) }, 4000, 1001, text[:1001], 0},
		{"stops at most when it grew", func() io.Reader { return strings.NewReader(text) }, 10, 1001, text[:1001], 0},
		{"data with EOF in one read", func() io.Reader { return iotest.DataErrReader(strings.NewReader(text)) }, 4000, 1 << 20, text, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cr := &countingReader{r: tc.r()}
			got, err := readUpTo(context.Background(), cr, tc.size, tc.most)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Fatalf("got %d bytes, want %d", len(got), len(tc.want))
			}
			if tc.maxReads > 0 && cr.reads > tc.maxReads {
				t.Errorf("%d reads, want at most %d", cr.reads, tc.maxReads)
			}
		})
	}
}

func TestReadUpToErrors(t *testing.T) {
	boom := errors.New("disk gone")
	if _, err := readUpTo(context.Background(), io.MultiReader(strings.NewReader("abc"), iotest.ErrReader(boom)), 3, 100); !errors.Is(err, boom) {
		t.Errorf("read error: got %v, want %v", err, boom)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := readUpTo(ctx, bytes.NewReader([]byte("abc")), 3, 100); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: got %v, want context.Canceled", err)
	}
}
