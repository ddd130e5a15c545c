package executor

import (
	"bytes"
	"strings"
	"testing"
)

// yamlFastCases are documents for the differential test and seeds for
// FuzzYAMLFast. fast says whether the fast path must take the document
// (true) or must leave it to yaml.v3 (false); either way, what it gives must
// be what the yaml.v3 path gives.
var yamlFastCases = []struct {
	name string
	doc  string
	fast bool
}{
	// The shapes envelopes and chat bodies use.
	{"envelope", "verb: fs.exists\narguments:\n  path: README.md\n", true},
	{"envelope no newline", "verb: fs.exists\narguments:\n  path: x", true},
	{"flow arguments", "verb: fs.readRange\narguments: {path: README.md, startLine: 1, endLine: 2}\n", true},
	{"flow json-like", `verb: x` + "\n" + `arguments: {"path":"a b","n":1}`, true},
	{"nested flow", "a: {b: [1, 2, {c: d}], e: []}\nf: {}\n", true},
	{"block sequence", "verb: proc.run\narguments:\n  command: ls\n  args:\n    - -l\n    - 'a b'\n    - \"c\"\n", true},
	{"compact sequence", "a:\n- 1\n- two\nb: 3\n", true},
	{"top-level sequence", "- a\n- b\n", true},
	{"top-level flow sequence", "[a, b, 'c d', \"e\"]", true},
	{"top-level flow mapping", "{a: 1}", true},
	{"top-level scalar", "hello world", true},
	{"top-level quoted", "'it''s'", true},
	{"comments", "# head\nverb: x # trailing\n\n  # indented\narguments: # here\n  path: a#b # c\n# tail\n", true},
	{"null values", "a:\nb: ~\nc: null\nd: NULL\ne: # c\n", true},
	{"nested null then dedent", "a:\n  b:\nc: 1\n", true},
	{"blank lines", "\n\n a: 1\n\n b: 2\n\n", true},
	{"deep", "a:\n  b:\n    c:\n      d: e\n  f: g\nh: i\n", true},
	{"spaces around", "a  b :   c  d   \n", true},
	{"key with colon", "a:b: c\nurl: http://x/y?z=1\n", true},
	{"quoted keys", "\"a b\": 1\n'c''d': 2\n\"\\u00e9\": 3\n", true},
	{"unicode", "name: héllo → 世界 😀\n", true},
	{"html and quotes", "a: <b>&\"c\"\nb: \"\\\" \\\\ /\"\n", true},
	{"escapes", `a: "\0\a\b\t\n\v\f\r\e\ \"\'\\\N\_\L\P\x41\u00e9\U0001F600"`, true},
	{"json control escapes", `a: "\x01\x1f\x7f"`, true},
	{"line separator escape", `a: "x\u2028y\u2029z"`, true},
	{"single quotes", "a: 'x \"y\" \\n ''z'''\n", true},
	{"empty quoted", "a: ''\nb: \"\"\n", true},
	{"flow quoted", `a: ['x, y', "z]", '']`, true},

	// Scalar typing as yaml.v3 types it.
	{"bools", "a: true\nb: False\nc: TRUE\nd: yes\ne: no\nf: on\ng: off\nh: y\ni: n\nj: tRue\n", true},
	{"ints", "a: 0\nb: -0\nc: 42\nd: -17\ne: +5\nf: 007\ng: 0x1F\nh: 0o17\ni: 0b101\nj: -0b11\nk: 1_000\nl: -0x10\nm: -0o7\n", true},
	{"big ints", "a: 9223372036854775807\nb: 9223372036854775808\nc: 18446744073709551615\nd: 18446744073709551616\ne: -9223372036854775808\nf: -9223372036854775809\ng: 0xffffffffffffffff\n", true},
	{"floats", "a: 1.5\nb: -0.0\nc: .5\nd: 1e3\ne: 1E-7\nf: +1.\ng: 1.5e300\nh: 1e400\ni: 1_0.5\nj: 6.02e+23\n", true},
	{"not numbers", "a: 0x\nb: 0o\nc: 0b\nd: 1.2.3\ne: 1e\nf: -\ng: +a\nh: 0x1p-2\ni: .e5\nj: 12:30\nk: 1,000\nl: --5\n", false},
	{"strings that look typed", "a: nan\nb: NaN\nc: Inf\nd: infinity\ne: None\nf: Null2\ng: 'true'\nh: \"1\"\ni: ~x\n", true},

	// What yaml.v3 refuses or the fast path leaves to it.
	{"inf", "a: .inf\n", false},
	{"negative inf", "a: -.Inf\n", false},
	{"nan", "a: .nan\n", false},
	{"timestamps", "a: 2001-12-14\nb: 2001-12-14t21:59:43.10-05:00\nc: 2001-12-14 21:59:43.10\nd: 2001-13-45\ne: 1-2-3\n", true},
	{"duplicate key", "a: 1\na: 2\n", false},
	{"duplicate quoted key", "a: 1\n\"a\": 2\n", false},
	{"duplicate flow key", "a: {b: 1, 'b': 2}\n", false},
	{"same key in two mappings", "a: {b: 1}\nc: {b: 2}\nb: 3\n", true},
	{"merge key", "<<: {a: 1}\n", false},
	{"merge value", "a: <<\n", false},
	{"quoted merge key", "'<<': 1\n", true},
	{"anchor and alias", "a: &x 1\nb: *x\n", false},
	{"tag", "a: !!str 1\n", false},
	{"literal block", "a: |\n  x\n  y\n", false},
	{"folded block", "a: >\n  x\n", false},
	{"multi-line plain", "a: x\n  y\n", false},
	{"multi-line top scalar", "x\ny\n", false},
	{"multi-line quoted", "a: 'x\n  y'\n", false},
	{"multi-line flow", "a: [1,\n  2]\n", false},
	{"value below key", "a:\n  x\n", false},
	{"two documents", "a: 1\n---\nb: 2\n", false},
	{"document start", "---\na: 1\n", false},
	{"document end", "a: 1\n...\n", false},
	{"directive", "%YAML 1.2\n---\na: 1\n", false},
	{"tab indent", "a:\n\tb: 1\n", false},
	{"tab in value", "a: x\ty\n", false},
	{"crlf", "a: 1\r\nb: 2\r\n", false},
	{"bom", "\ufeffa: 1\n", false},
	{"nel", "a: x\u0085y\n", false},
	{"bad indent", "a:\n    b: 1\n  c: 2\n", false},
	{"over-indented key", "a: 1\n b: 2\n", false},
	{"mapping in value", "a: b: c\n", false},
	{"colon at end", "a: b:\n", false},
	{"sequence of mappings", "- a: 1\n  b: 2\n", false},
	{"nested sequence", "- - a\n", false},
	{"empty entry", "-\n- a\n", false},
	{"complex key", "? a\n: b\n", false},
	{"flow key", "[a]: b\n", false},
	{"flow trailing comma", "a: [1, 2, ]\n", false},
	{"flow missing value", "a: {b: }\n", false},
	{"flow single pair", "a: [b: c]\n", false},
	{"flow comment", "a: [b #c\n]\n", false},
	{"after flow", "a: [1] x\n", false},
	{"after quoted", "a: 'x' y\n", false},
	{"unknown escape", `a: "\/"`, false},
	{"surrogate escape", `a: "\ud800"`, false},
	{"short hex escape", `a: "\x4"`, false},
	{"unclosed quote", "a: 'x\n", false},
	{"unclosed flow", "a: {b: 1\n", false},
	{"reserved", "a: @x\n", false},
	{"backquote", "a: `x`\n", false},
	{"empty", "", false},
	{"comments only", "# a\n# b\n", false},
	{"control byte", "a: x\x01y\n", false},
	{"invalid utf-8", "a: \xff\n", false},
	{"long key", strings.Repeat("k", 1100) + ": 1\n", false},
	{"sequence after value", "a: 1\n- 2\n", false},
	{"mapping then less indent", "  a: 1\nb: 2\n", false},
	{"top-level indented sequence", "  - a\n", false},
	{"deep flow", "a: " + strings.Repeat("[", 40) + strings.Repeat("]", 40) + "\n", false},
}

// TestYAMLFast compares the fast path with the yaml.v3 path on every case:
// the same JSON when it takes a document, and it takes the shapes it is for.
func TestYAMLFast(t *testing.T) {
	lim := DefaultLimits
	for _, tc := range yamlFastCases {
		t.Run(tc.name, func(t *testing.T) {
			slow, slowErr := yamlToJSONSlow([]byte(tc.doc), lim)
			fast, ok := yamlFast([]byte(tc.doc), lim)
			if ok != tc.fast {
				t.Errorf("fast path took it: %v, want %v (yaml.v3: %s, %v)", ok, tc.fast, slow, slowErr)
			}
			if !ok {
				return
			}
			if slowErr != nil {
				t.Fatalf("fast path gave %s, yaml.v3 path refused it: %v", fast, slowErr)
			}
			if !bytes.Equal(fast, slow) {
				t.Fatalf("fast path gave\n%s\nyaml.v3 path gave\n%s", fast, slow)
			}
		})
	}
}

// TestYAMLFastLimits checks that the fast path leaves what crosses the
// depth and value limits to the yaml.v3 path, which refuses it.
func TestYAMLFastLimits(t *testing.T) {
	cases := []struct {
		doc string
		lim Limits
	}{
		{"a:\n  b:\n    c: 1\n", Limits{MaxDepth: 2}},
		{"a: [[1]]\n", Limits{MaxDepth: 2}},
		{"a: {b: {c: 1}}\n", Limits{MaxDepth: 2}},
		{"- a\n- b\n- c\n", Limits{MaxNodes: 4}},
		{"a: [1, 2, 3]\n", Limits{MaxNodes: 5}},
	}
	for _, tc := range cases {
		lim := tc.lim.withDefaults()
		if j, ok := yamlFast([]byte(tc.doc), lim); ok {
			t.Errorf("%q under %+v: fast path gave %s, want it left to yaml.v3", tc.doc, tc.lim, j)
		}
		if _, err := YAMLToJSON([]byte(tc.doc), tc.lim); err == nil {
			t.Errorf("%q under %+v: no error", tc.doc, tc.lim)
		}
		// One level or value more and both accept it.
		looser := lim
		looser.MaxDepth++
		looser.MaxNodes++
		fast, ok := yamlFast([]byte(tc.doc), looser)
		slow, err := yamlToJSONSlow([]byte(tc.doc), looser)
		if !ok || err != nil || !bytes.Equal(fast, slow) {
			t.Errorf("%q under %+v: fast %s (%v), yaml.v3 %s (%v)", tc.doc, looser, fast, ok, slow, err)
		}
	}
}

// FuzzYAMLFast: for any input the fast path either declines it or gives
// exactly what the yaml.v3 path gives.
func FuzzYAMLFast(f *testing.F) {
	for _, tc := range yamlFastCases {
		f.Add([]byte(tc.doc))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		lim := Limits{MaxDepth: 8, MaxNodes: 64}.withDefaults()
		fast, ok := yamlFast(doc, lim)
		if !ok {
			return
		}
		slow, err := yamlToJSONSlow(doc, lim)
		if err != nil {
			t.Fatalf("%q: fast path gave %s, yaml.v3 path refused it: %v", doc, fast, err)
		}
		if !bytes.Equal(fast, slow) {
			t.Fatalf("%q: fast path gave %s, yaml.v3 path gave %s", doc, fast, slow)
		}
	})
}

// BenchmarkYAMLToJSON compares YAMLToJSON (the fast path for these shapes)
// with the yaml.v3 path on the same envelopes, in one run.
func BenchmarkYAMLToJSON(b *testing.B) {
	docs := []struct{ name, doc string }{
		{"exists", "verb: fs.exists\narguments:\n  path: README.md\n"},
		{"flow", "verb: fs.readRange\narguments: {path: README.md, startLine: 1, endLine: 2}\n"},
		{"sequence", "verb: proc.run\narguments:\n  executable: ls\n  arguments:\n    - -l\n    - 'a b'\n"},
	}
	for _, d := range docs {
		in := []byte(d.doc)
		if _, ok := yamlFast(in, DefaultLimits); !ok {
			b.Fatalf("%s: the fast path declines it", d.name)
		}
		b.Run(d.name+"/fast", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := YAMLToJSON(in, Limits{}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(d.name+"/yaml.v3", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := yamlToJSONSlow(in, DefaultLimits); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestYAMLToJSONAllocs holds the YAML envelope's conversion to one
// allocation, its output (two: the race detector drops pooled parsers at
// random); the yaml.v3 path makes over 70.
func TestYAMLToJSONAllocs(t *testing.T) {
	in := []byte("verb: fs.exists\narguments:\n  path: README.md\n")
	if _, err := YAMLToJSON(in, Limits{}); err != nil { // warm the pool
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = YAMLToJSON(in, Limits{}) }); n > 2 {
		t.Errorf("YAMLToJSON allocates %v times for a plain envelope, want 1", n)
	}
}
