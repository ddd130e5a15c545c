package mcp

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/verbs"
)

// readOutcome is the outcome of an fs.readFile of path that read content,
// with notes.
func readOutcome(path, content string, enc verbs.FileEncoding, notes ...string) *executor.Outcome {
	return &executor.Outcome{
		Verb:  "fs.readFile",
		Args:  &verbs.FsReadFileArgs{Path: path},
		Notes: notes,
		Value: &verbs.FsReadFileResult{
			Result:  executor.Result{Succeeded: true},
			Content: content,
			File:    &verbs.VfsFile{Path: path, Encoding: enc, SizeBytes: int64(len(content))},
		},
	}
}

// answerLine is the answer made the plain way, in one buffer: the text
// rendered (RenderText) and escaped, then the result's encoding.
func answerLine(id jsonrpc.ID, out *executor.Outcome) []byte {
	b := answerMiddle(executor.AppendJSONString(answerHead(nil, id), executor.RenderText(out, false)))
	return answerTail(out.AppendJSON(b), out)
}

// checkParts: the answer in parts is, byte for byte, the answer made the
// plain way (answerLine), and parts says whether it came in parts.
func checkParts(t *testing.T, id jsonrpc.ID, out *executor.Outcome, wantParts int) {
	t.Helper()
	parts, err := answerParts(id, out, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := bytes.Join(parts, nil)
	want := answerLine(id, out)
	if !bytes.Equal(got, want) {
		i := 0
		for i < len(got) && i < len(want) && got[i] == want[i] {
			i++
		}
		t.Fatalf("answer in %d parts differs from the answer in one at byte %d of %d/%d:\nparts %q\none   %q",
			len(parts), i, len(got), len(want), got[max(0, i-40):min(len(got), i+40)], want[max(0, i-40):min(len(want), i+40)])
	}
	if len(parts) != wantParts {
		t.Fatalf("%d parts, want %d", len(parts), wantParts)
	}
	var msg struct {
		Result struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
			Structured map[string]any `json:"structuredContent"`
		} `json:"result"`
	}
	if err := json.Unmarshal(got, &msg); err != nil || len(msg.Result.Content) != 1 || msg.Result.Structured == nil {
		t.Fatalf("answer does not decode as a tool result (%v): %.200q", err, got)
	}
	if !bytes.HasSuffix(got, []byte("}}\n")) || bytes.Count(got, []byte("\n")) != 1 {
		t.Fatalf("answer is not one line: %.200q", got[len(got)-min(len(got), 200):])
	}
}

// TestAnswerInParts: a large file's answer is written in five parts (its
// content's part cut from the result's encoding), any other large result
// in three, a small one in one (its content also taken from the
// encoding); each is byte for byte the answer made the plain way:
// escapes, line ends Render cuts (and a backslash and n that are not one),
// backtick fences, invalid UTF-8 at the cuts, notes, ids.
func TestAnswerInParts(t *testing.T) {
	fill := strings.Repeat("0123456789abcdef ", partsFrom/16)
	strID, _ := jsonrpc.MakeID("s-é\"1")
	numID, _ := jsonrpc.MakeID(float64(42))
	for _, tc := range []struct {
		name, content string
		parts         int
	}{
		{"plain", fill + "\n", 5},
		{"no final line end", fill, 5},
		{"three line ends", fill + "\n\n\n", 5},
		{"a backslash and n, then a line end", fill + `\n` + "\n", 5},
		{"a backslash, then line ends", fill + `\` + "\n\n", 5},
		{"only line ends", strings.Repeat("\n", partsFrom), 5},
		{"backticks", "````go\n" + fill + "\n`````\n", 5},
		{"HTML and separators", "<b>&amp;</b> \u2028\u2029 é ✓ \t\r" + fill + "\x00\x1f\n", 5},
		{"invalid UTF-8 at both ends", "\xff\xfe" + fill + "\xe2\x82\n", 5},
		{"a rune cut before the line end", fill + "\xe2\x82" + "\n\n", 5},
		{"small", "hello\n", 1},
		{"small, three line ends", "hello\n\n\n", 1},
		{"small, a backslash and n", "hello" + `\n` + "\n", 1},
		{"small, a rune cut before the line end", "hé\xe2\x82\n", 1},
		{"small, backticks and HTML", "```\n<b>&</b> \u2028 \x00", 1},
		{"empty", "", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, id := range []jsonrpc.ID{strID, numID} {
				checkParts(t, id, readOutcome("dir/a `b`.go", tc.content, verbs.EncodingUTF8), tc.parts)
				checkParts(t, id, readOutcome("a.txt", tc.content, verbs.EncodingUTF8, "first note", "second \"note\"\n"), tc.parts)
			}
		})
	}
	// Base64 content is not in the text: the text is escaped as it is.
	checkParts(t, numID, readOutcome("a.bin", fill, verbs.EncodingBase64), 3)
	// A large result of another verb: its encoding is a part of its own.
	names := make([]verbs.DirEntry, 0, 8000)
	for i := range 8000 {
		names = append(names, verbs.DirEntry{Name: strings.Repeat("n", i%40) + "é", IsDirectory: i%3 == 0})
	}
	checkParts(t, numID, &executor.Outcome{
		Verb: "fs.listDir", Args: &verbs.FsListDirArgs{Path: "."},
		Value: &verbs.FsListDirResult{Result: executor.Result{Succeeded: true}, Entries: names},
	}, 3)
}

// TestRenderBodyRefusesAnotherEncoding: the span is given only for the
// encoding of the result itself.
func TestRenderBodyRefusesAnotherEncoding(t *testing.T) {
	out := readOutcome("a.txt", "hello\n\n", verbs.EncodingUTF8)
	r := out.Value.(*verbs.FsReadFileResult)
	enc := out.EncodedJSON()
	if _, _, start, end, ok := r.RenderBody(out.Args, enc); !ok || string(enc[start:end]) != "hello" {
		t.Fatalf("RenderBody of its own encoding: ok %v, %q", ok, enc[start:end])
	}
	for _, other := range []string{
		``,
		`{}`,
		`{"succeeded":true,"content":"hello\n\n"}`,
		`{"succeeded":true,"content":"hello\\n","file":{"path":"a.txt","encoding":"utf-8","sizeBytes":7}}`,
		strings.Replace(string(enc), `a.txt`, `b.txt`, 1),
		strings.Replace(string(enc), `\n\n"`, `\u000a\n"`, 1),
	} {
		if _, _, _, _, ok := r.RenderBody(out.Args, []byte(other)); ok {
			t.Fatalf("RenderBody took %q", other)
		}
	}
}

// FuzzAnswerParts: whatever a file holds at its ends, its answer, in parts
// when large and in one when small, is the answer made the plain way.
func FuzzAnswerParts(f *testing.F) {
	f.Add("", "\n")
	f.Add("```", "\\n\n\n")
	f.Add("\xe2", "\xe2\x82\n")
	f.Add("<&>", "\u2028\n\n")
	fill := strings.Repeat("x", partsFrom)
	id, _ := jsonrpc.MakeID(float64(7))
	f.Fuzz(func(t *testing.T, head, tail string) {
		checkParts(t, id, readOutcome("f.txt", head+fill+tail, verbs.EncodingUTF8), 5)
		if len(head)+len(tail) < partsFrom/2 {
			checkParts(t, id, readOutcome("f.txt", head+tail, verbs.EncodingUTF8, "a note"), 1)
		}
	})
}
