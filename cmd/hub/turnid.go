package main

import (
	"crypto/rand"
	"encoding/hex"
	"time"
)

// turnIDs makes the turn ids of the CLI's calls in hub.NewTurnID's form
// (prefix.20060102T150405Z-<12 hex digits>), formatting the time once per
// second instead of once per call: `hub exec --stdio` makes one per line.
// One goroutine uses it.
type turnIDs struct {
	prefix string
	sec    int64
	stamp  []byte // prefix.20060102T150405Z- of sec
}

func newTurnIDs(prefix string) *turnIDs { return &turnIDs{prefix: prefix} }

func (t *turnIDs) next(now time.Time) string {
	if s := now.Unix(); t.stamp == nil || s != t.sec {
		t.sec = s
		t.stamp = now.UTC().AppendFormat(append([]byte(t.prefix), '.'), "20060102T150405Z")
		t.stamp = append(t.stamp, '-')
	}
	var r [6]byte
	_, _ = rand.Read(r[:])
	id := make([]byte, len(t.stamp)+hex.EncodedLen(len(r)))
	n := copy(id, t.stamp)
	hex.Encode(id[n:], r[:])
	return string(id)
}
