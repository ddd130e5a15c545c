package store

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"
)

// stdLine is the mirror line encoding/json writes for rec (the encoding
// the mirror used before appendJSON, and the one readers decode).
func stdLine(t testing.TB, rec *MirrorRecord) ([]byte, error) {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	err := enc.Encode(rec)
	return b.Bytes(), err
}

func checkLine(t *testing.T, rec MirrorRecord) {
	t.Helper()
	want, wantErr := stdLine(t, &rec)
	got, err := rec.appendJSON([]byte("x"))
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("appendJSON error %v, encoding/json %v", err, wantErr)
	}
	if err != nil {
		return
	}
	if !bytes.Equal(got[1:], want) || got[0] != 'x' {
		t.Fatalf("appendJSON:\n%s\nencoding/json:\n%s", got, want)
	}
}

func TestMirrorLineMatchesEncodingJSON(t *testing.T) {
	ts := time.Date(2026, 11, 27, 14, 18, 4, 493000100, time.UTC)
	full := MirrorRecord{
		TS: ts, Direction: DirectionOutbound, Platform: "mcp", ChatID: "agent:local", ThreadID: "t<1>",
		MessageID: "mcp-1", Actor: "agent:local", Kind: "result", Text: "line 1\nline \"2\" \\ <&> \xff é \u2028",
		Meta:  map[string]string{"verb": "fs.readFile", "turn_id": "mcp:1", "a\nb": "\x01", "": "empty key", "é": "ü"},
		RunID: "20261127T141804Z-381a", EventType: EventOutbound, TextPreview: "line 1 line", TextBytes: 1 << 40,
	}
	for name, rec := range map[string]MirrorRecord{
		"zero":          {},
		"full":          full,
		"nil meta":      {TS: ts, Text: "x", Meta: nil},
		"empty meta":    {TS: ts, Meta: map[string]string{}},
		"many meta":     {TS: ts, Meta: map[string]string{"k9": "9", "k1": "1", "k5": "5", "k3": "3", "k7": "7", "k2": "2", "k8": "8", "k4": "4", "k6": "6", "k0": "0"}},
		"whole second":  {TS: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)},
		"offset zone":   {TS: time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("x", -(3*3600+30*60)))},
		"year 0":        {TS: time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)},
		"year 10000":    {TS: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
		"year -1":       {TS: time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)},
		"negative size": {TextBytes: -5},
		"long text":     {TS: ts, Text: strings.Repeat("0123456789abcdef\n", 5000)},
		"bytes ignored": {TS: ts, Text: "t", Bytes: []byte("not in the line")},
	} {
		t.Run(name, func(t *testing.T) { checkLine(t, rec) })
	}
}

func FuzzMirrorLine(f *testing.F) {
	f.Add(int64(1795000000), int64(493000100), 0, "outbound", "mcp", "text\n\"q\"", "verb", "fs.exists", "k2", "\xff", 12)
	f.Add(int64(-62167219300), int64(0), 0, "", "", "", "", "", "", "", 0)
	f.Add(int64(1795000000), int64(7), -(24*3600 + 1), "", "", "", "", "", "", "", 0)
	f.Fuzz(func(t *testing.T, sec, nsec int64, offset int, dir, platform, text, k1, v1, k2, v2 string, size int) {
		ts := time.Unix(sec, nsec).UTC()
		if offset != 0 {
			ts = ts.In(time.FixedZone("z", offset))
		}
		rec := MirrorRecord{
			TS: ts, Direction: dir, Platform: platform, ChatID: v1, ThreadID: k2,
			MessageID: k1, Actor: v2, Kind: dir, Text: text, Meta: map[string]string{k1: v1, k2: v2},
			RunID: platform, EventType: text, TextPreview: TextPreview(text), TextBytes: size,
		}
		checkLine(t, rec)
	})
}

// BenchmarkMirrorLine is a tool call's result record encoded, small and
// with 4 KB of text, by appendJSON and by encoding/json.
func BenchmarkMirrorLine(b *testing.B) {
	for _, n := range []int{100, 4096} {
		text := strings.Repeat("abcdefghij\n", n/11+1)[:n]
		rec := MirrorRecord{
			TS: time.Now().UTC(), Direction: DirectionOutbound, Platform: "mcp", ChatID: "agent:local", MessageID: "mcp-123-45",
			Actor: "agent:local", Kind: "result", Text: text, RunID: "20261127T141804Z-381a", EventType: EventOutbound,
			Meta:        map[string]string{"turn_id": "mcp:abc:1", "verb": "fs.readFile", "workspace": "default", "succeeded": "true"},
			TextPreview: TextPreview(text), TextBytes: n,
		}
		b.Run(strconv.Itoa(n)+"B/appendJSON", func(b *testing.B) {
			b.ReportAllocs()
			var buf []byte
			for b.Loop() {
				buf, _ = rec.appendJSON(buf[:0])
			}
		})
		b.Run(strconv.Itoa(n)+"B/encoding-json", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				stdLine(b, &rec)
			}
		})
	}
}
