package store

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/a6afc2ce/hermes-hub/internal/jsonstr"
)

// appendJSON appends rec as one mirror line: the bytes json.Encoder writes
// for it with HTML escaping off, newline included (docs/state.md, "The
// mirror"), without encoding/json's reflection: every exchange writes two
// records, so their encoding is on every call's path. A time the mirror
// does not write (it writes UTC) or that RFC 3339 cannot hold, which
// encoding/json may refuse, is left to encoding/json, error included.
func (rec *MirrorRecord) appendJSON(dst []byte) ([]byte, error) {
	if _, off := rec.TS.Zone(); off != 0 || rec.TS.Year() < 0 || rec.TS.Year() > 9999 {
		b := bytes.NewBuffer(dst)
		enc := json.NewEncoder(b)
		enc.SetEscapeHTML(false)
		err := enc.Encode(rec) // with the newline
		return b.Bytes(), err
	}
	dst = append(dst, `{"ts":"`...)
	dst = rec.TS.AppendFormat(dst, time.RFC3339Nano)
	dst = field(append(dst, `","direction":`...), rec.Direction)
	dst = field(append(dst, `,"platform":`...), rec.Platform)
	dst = field(append(dst, `,"chat_id":`...), rec.ChatID)
	dst = field(append(dst, `,"thread_id":`...), rec.ThreadID)
	dst = field(append(dst, `,"message_id":`...), rec.MessageID)
	dst = field(append(dst, `,"actor":`...), rec.Actor)
	dst = field(append(dst, `,"kind":`...), rec.Kind)
	dst = field(append(dst, `,"text":`...), rec.Text)
	dst = appendMeta(append(dst, `,"meta":`...), rec.Meta)
	dst = field(append(dst, `,"run_id":`...), rec.RunID)
	dst = field(append(dst, `,"event_type":`...), rec.EventType)
	dst = field(append(dst, `,"text_preview":`...), rec.TextPreview)
	dst = strconv.AppendInt(append(dst, `,"text_bytes":`...), int64(rec.TextBytes), 10)
	return append(dst, '}', '\n'), nil
}

func field(dst []byte, s string) []byte { return jsonstr.Append(dst, s, false) }

// appendMeta appends m as encoding/json does: null when nil, keys sorted.
func appendMeta(dst []byte, m map[string]string) []byte {
	if m == nil {
		return append(dst, "null"...)
	}
	var arr [8]string
	keys := arr[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	dst = append(dst, '{')
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(field(dst, k), ':')
		dst = field(dst, m[k])
	}
	return append(dst, '}')
}

// lineBufs holds the buffers mirror lines are encoded into; a line is
// written before its buffer goes back, and only buffers of ordinary size
// are kept.
var lineBufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

const keptLineBuf = 64 << 10
