package executor

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

// refCheckJSON is the decoder-based checker the scanner replaced: the
// reference its verdicts are compared with.
func refCheckJSON(data []byte, lim Limits) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	type frame struct {
		object bool
		keys   map[string]struct{}
		want   bool // next string token in an object is a key
	}
	var stack []frame
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			if len(stack) > 0 {
				return fmt.Errorf("not valid JSON: unexpected end of input (%d unclosed brackets)", len(stack))
			}
			break
		}
		if err != nil {
			return jsonSyntaxError(data, err)
		}
		var top *frame
		if len(stack) > 0 {
			top = &stack[len(stack)-1]
		}
		if top != nil && top.object && top.want {
			key, ok := tok.(string)
			if ok {
				if _, dup := top.keys[key]; dup {
					return fmt.Errorf("key %q appears twice in one object (offset %d)", key, dec.InputOffset())
				}
				top.keys[key] = struct{}{}
				top.want = false
				continue
			}
		}
		if top != nil && top.object {
			top.want = true
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			if len(stack) >= lim.MaxDepth {
				return fmt.Errorf("input nests more than %d levels deep", lim.MaxDepth)
			}
			obj := tok == json.Delim('{')
			f := frame{object: obj, want: obj}
			if obj {
				f.keys = map[string]struct{}{}
			}
			stack = append(stack, f)
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			if len(stack) > 0 && stack[len(stack)-1].object {
				stack[len(stack)-1].want = true
			}
		}
		if len(stack) == 0 && dec.More() {
			return fmt.Errorf("unexpected data after the JSON value at offset %d; send one envelope at a time", dec.InputOffset())
		}
	}
	return nil
}

var jsonCheckSeeds = []string{
	`{"verb":"fs.exists","arguments":{"path":"README.md"}}`,
	`{"a":1,"a":2}`, `{"a":1,"\u0061":2}`, `{"\ud800":1,"\udbff":2}`,
	`{"a":{"a":1},"b":[{"a":1,"a":2}]}`, `[1,2,3]`, `"x"`, `-0.5e+3`, `01`, `1.`, `.5`, `-`,
	`{"a":tru}`, `{"a" 1}`, `{"a":1,}`, `[1,]`, `{} {}`, `{}x`, `"\x"`, "\"a\tb\"", `"\u12g4"`,
	`[[[[[[[[[[1]]]]]]]]]]`, `{"a":[{"b":{"c":[]}}]}`, `  {"k" : "v" }  `, `{`, `[`, `"`, `nul`,
	`{"k1":1,"k2":1,"k3":1,"k4":1,"k5":1,"k6":1,"k7":1,"k8":1,"k9":1,"k10":1,"k11":1,"k12":1,"k13":1,"k14":1,"k15":1,"k16":1,"k17":1,"k3":2}`,
}

// TestScanJSONMatchesDecoder checks the scanner's verdict (valid, duplicate
// key, too deep) against the encoding/json based reference.
func TestScanJSONMatchesDecoder(t *testing.T) {
	lim := Limits{MaxDepth: 8}
	for _, in := range jsonCheckSeeds {
		compareCheckers(t, []byte(in), lim)
	}
}

func FuzzScanJSON(f *testing.F) {
	for _, s := range jsonCheckSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		compareCheckers(t, in, Limits{MaxDepth: 8})
	})
}

func compareCheckers(t *testing.T, in []byte, lim Limits) {
	t.Helper()
	if len(bytes.TrimSpace(in)) == 0 {
		return // refused before any check: the reference accepts it, the scanner does not
	}
	got := checkJSON(in, lim)
	want := refCheckJSON(in, lim)
	if (got == nil) != (want == nil) {
		t.Fatalf("%q: scanner says %v, decoder says %v", in, got, want)
	}
	if got == nil {
		if !json.Valid(in) {
			t.Fatalf("%q accepted but not valid JSON", in)
		}
		return
	}
	for _, kind := range []string{"appears twice", "levels deep"} {
		if strings.Contains(got.Error(), kind) != strings.Contains(want.Error(), kind) && json.Valid(in) {
			t.Fatalf("%q: scanner says %v, decoder says %v", in, got, want)
		}
	}
}

func TestScanJSONMembers(t *testing.T) {
	s, err := scanJSON([]byte(` {"verb" : "fs.exists", "arguments":{"path":"a"},"\u0069d":7} `), 8)
	defer s.release()
	if err != nil {
		t.Fatal(err)
	}
	ms := s.top
	var got []string
	for _, m := range ms {
		got = append(got, fmt.Sprintf("%s=%s", m.key, m.val))
	}
	if want := `verb="fs.exists" arguments={"path":"a"} id=7`; strings.Join(got, " ") != want {
		t.Fatalf("members %q, want %q", strings.Join(got, " "), want)
	}
}

func TestScanJSONAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are measured without the race detector (make test runs go test once without it for this)")
	}
	in := []byte(`{"verb":"fs.exists","arguments":{"path":"README.md","x":[1,2,{"y":null}]}}`)
	if n := testing.AllocsPerRun(100, func() { s, _ := scanJSON(in, 32); s.release() }); n != 0 {
		t.Fatalf("scanJSON allocates %v times per envelope", n)
	}
}

// TestObjectMembers: an object's members in order, keys unescaped, values
// as they are in the input; anything that is not one valid object, or
// that the scanner refuses (depth, a key twice), is an error, and fn's
// own error stops the walk.
func TestObjectMembers(t *testing.T) {
	type member struct{ key, value string }
	var got []member
	collect := func(k, v []byte) error { got = append(got, member{string(k), string(v)}); return nil }
	in := ` {"a":1, "b\u0031" : {"c":[true,null]}, "s":"x\"y" , "e":{}} `
	if err := ObjectMembers([]byte(in), 8, collect); err != nil {
		t.Fatal(err)
	}
	want := []member{{"a", "1"}, {"b1", `{"c":[true,null]}`}, {"s", `"x\"y"`}, {"e", "{}"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("members %q, want %q", got, want)
	}
	for _, bad := range []string{``, ` `, `[]`, `1`, `"s"`, `null`, `{"a":1`, `{"a":1}}`, `{"a":1,"a":2}`, `{"a":{"b":{"c":{}}}}`, `{"a":"` + "\x00" + `"}`} {
		got = nil
		if err := ObjectMembers([]byte(bad), 3, collect); err == nil {
			t.Errorf("%q: no error (members %q)", bad, got)
		}
	}
	stop := errors.New("stop")
	calls := 0
	if err := ObjectMembers([]byte(`{"a":1,"b":2}`), 8, func(k, v []byte) error { calls++; return stop }); err != stop || calls != 1 {
		t.Errorf("fn's error: %v after %d calls", err, calls)
	}
}

// TestScanJSONStringsAtEveryOffset: what ends a string or is refused in
// one (a quote, an escape, a control byte) is found at every offset from
// the scanner's eight-byte steps, after plain and non-ASCII bytes.
func TestScanJSONStringsAtEveryOffset(t *testing.T) {
	lim := Limits{MaxDepth: 8}
	for _, fill := range []string{"a", "é", "\x7f", "\xff", " ~"} {
		for n := range 20 {
			pre := strings.Repeat(fill, n)
			for _, mid := range []string{``, `\"`, `\\`, `\n`, `\u00e9`, `\x`, `\u12`, "\x00", "\x1f", "\t", `"`, `\`} {
				for _, in := range []string{`"` + pre + mid + pre + `"`, `{"k":"` + pre + mid + `","l":"` + mid + pre + `"}`, `["` + pre + mid} {
					compareCheckers(t, []byte(in), lim)
				}
			}
		}
	}
	for w := range uint64(1 << 16) { // every pair of bytes, six plain ones after
		b := []byte{'"', byte(w), byte(w >> 8), 'a', 'b', 'c', 'd', 'e', 'f', '"'}
		compareCheckers(t, b, lim)
	}
}

// BenchmarkScanJSONStrings: the scanner over an envelope, and over an
// object holding one long text (about 1 MB): a log (a line end every 80
// bytes), Go code (tabs, quotes and line ends every few bytes), and a
// text with an escape every three or four bytes.
func BenchmarkScanJSONStrings(b *testing.B) {
	text := func(s string) []byte { data, _ := json.Marshal(map[string]string{"content": s}); return data }
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"envelope", []byte(`{"verb":"fs.readRange","arguments":{"path":"logs/app.log","startLine":-50,"lineCount":50}}`)},
		{"log", text(strings.Repeat("2026-11-27T18:00:00Z INFO request served path=/api/v1/items status=200 took=1.2ms\n", 13000))},
		{"code", text(strings.Repeat("\tif err := f(x); err != nil {\n\t\treturn fmt.Errorf(\"f: %w\", err)\n\t}\n", 16000))},
		{"dense", text(strings.Repeat("line <a> & \"b\" \\ \t é\n", 50000))},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(tc.data)))
			for b.Loop() {
				if err := checkJSON(tc.data, Limits{MaxDepth: 8}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
