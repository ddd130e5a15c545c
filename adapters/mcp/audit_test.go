package mcp_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a6afc2ce/hermes-hub/store"
)

// TestAuditLargeResult: a result over mirror.max_text_bytes is mirrored
// cut, with its size and SHA-256, and an audit can tell what the client
// received: the SHA-256 of the answer's structuredContent, as sent, once
// the HTML escapes the SDK adds (\u003c, \u003e, \u0026) are undone, is the
// record's text_sha256, and its length the record's text_bytes.
func TestAuditLargeResult(t *testing.T) {
	c := openLines(t, nil)
	env, cfg := c.env, c.env.Config
	env.WriteFile(t, "big.html", strings.Repeat("<p class=\"a&b\">line é \\u003c not an escape</p>\n", 4000))
	c.initialize(`{}`)
	c.send(`{"jsonrpc":"2.0","id":"read-1","method":"tools/call","params":{"name":"fs_readFile","arguments":{"path":"big.html"}}}`)
	line := c.answer().Result
	var answer struct {
		StructuredContent json.RawMessage `json:"structuredContent"`
	}
	if err := json.Unmarshal(line, &answer); err != nil || len(answer.StructuredContent) == 0 {
		t.Fatalf("answer: %v %.300s", err, line)
	}
	sent := unescapeHTML(answer.StructuredContent)
	sum := sha256.Sum256(sent)

	var rec *store.MirrorRecord
	files, _ := filepath.Glob(filepath.Join(env.Config.StateDir, "flows", "*", "chat", "outbound.jsonl"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var m store.MirrorRecord
			if json.Unmarshal([]byte(l), &m) == nil && strings.HasSuffix(m.Meta["turn_id"], ".read-1") {
				rec = &m
			}
		}
	}
	switch {
	case rec == nil:
		t.Fatalf("no result record of the call in %v", files)
	case rec.Meta[store.MetaTextTruncated] != "true" || len(rec.Text) > int(cfg.Mirror.MaxTextBytes):
		t.Errorf("the %d-byte result is not cut to mirror.max_text_bytes: %d bytes kept", rec.TextBytes, len(rec.Text))
	case rec.TextBytes != len(sent) || rec.Meta[store.MetaTextSHA256] != hex.EncodeToString(sum[:]):
		t.Errorf("the record (%d bytes, sha256 %s) does not tell what was sent (%d bytes, sha256 %x)", rec.TextBytes, rec.Meta[store.MetaTextSHA256], len(sent), sum)
	case !strings.HasPrefix(string(sent), rec.Text[:len(rec.Text)-8]):
		t.Errorf("the record's first bytes are not those sent")
	}
}

// unescapeHTML undoes, in JSON text, the escapes encoding/json writes for
// <, > and & (\u003c, \u003e, \u0026), and only those: an escaped
// backslash followed by u003c is text and stays.
func unescapeHTML(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 >= len(b) {
			out = append(out, b[i])
			continue
		}
		if b[i+1] == 'u' && i+6 <= len(b) {
			switch string(b[i+2 : i+6]) {
			case "003c":
				out, i = append(out, '<'), i+5
				continue
			case "003e":
				out, i = append(out, '>'), i+5
				continue
			case "0026":
				out, i = append(out, '&'), i+5
				continue
			}
		}
		out, i = append(out, b[i], b[i+1]), i+1 // any other escape, as it is
	}
	return out
}
