package mcp_test

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// The checks behind the comparison must reject wrong answers, or the
// figures would compare servers that did not do the work.

func TestMCPText(t *testing.T) {
	for _, tc := range []struct {
		name, msg, want, err string
	}{
		{"text", `{"result":{"content":[{"type":"text","text":"a\nb"}],"structuredContent":{"content":"a\nb"}},"jsonrpc":"2.0","id":5}`, "a\nb", ""},
		{"tool error", `{"result":{"content":[{"type":"text","text":"ENOENT: no such file"}],"isError":true},"jsonrpc":"2.0","id":4}`, "", "tool error: ENOENT"},
		{"rpc error", `{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"Invalid params"}}`, "", "JSON-RPC error -32602: Invalid params"},
		{"no result", `{"jsonrpc":"2.0","id":3}`, "", "neither result nor error"},
		{"image block", `{"result":{"content":[{"type":"image","data":"AA=="}]},"jsonrpc":"2.0","id":3}`, "", "want one text block"},
		{"not json", `{"result":`, "", "decode response"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := mcpText([]byte(tc.msg))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestMCPListing(t *testing.T) {
	got, err := mcpListing("[FILE] b.txt\n[DIR] sub\n[FILE] a.txt")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"D sub", "F a.txt", "F b.txt"}; !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	if _, err := mcpListing("[FILE] a\nsomething else"); err == nil {
		t.Fatal("a line without [DIR] or [FILE] was accepted")
	}
	if err := sameListing([]string{"F a"}, []string{"D a"}); err == nil {
		t.Fatal("a file listed as a directory was accepted")
	}
}

func TestSameText(t *testing.T) {
	if err := sameText(span(1, 3), span(1, 3)); err != nil {
		t.Fatal(err)
	}
	// MCP's tail answer keeps the final newline; the hub's range does not.
	err := sameText(span(1, 3), span(1, 3)+"\n")
	if err == nil || !strings.Contains(err.Error(), "at byte") {
		t.Fatalf("a missing final newline gave %v", err)
	}
	f := textFile{"x", 2}
	if got := f.content(); got != line(1)+"\n"+line(2)+"\n" || len(got) != f.size() {
		t.Fatalf("content %q (%d bytes), want two lines of %d bytes", got, len(got), lineLen)
	}
}

func TestPercentile(t *testing.T) {
	var lat []time.Duration
	for i := 100; i >= 1; i-- {
		lat = append(lat, time.Duration(i)*time.Millisecond)
	}
	if p := percentile(lat, 0.50); p != 50 {
		t.Errorf("p50 = %v, want 50", p)
	}
	if p := percentile(lat, 0.99); p != 99 {
		t.Errorf("p99 = %v, want 99", p)
	}
	if lat[0] != 100*time.Millisecond {
		t.Error("percentile sorted its argument in place")
	}
	if s := (stats{lat: []time.Duration{time.Second / 4, time.Second / 4}}); s.opsPerSec() != 4 {
		t.Errorf("ops/s = %v, want 4", s.opsPerSec())
	}
}
