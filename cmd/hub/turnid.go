package main

import (
	crand "crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"math/rand/v2"
	"strings"
	"time"
)

// turnIDs makes the turn ids of the CLI's calls in hub.NewTurnID's form
// (prefix.20060102T150405Z-<12 hex digits>), formatting the time once per
// second instead of once per call, and drawing the random suffix from a
// ChaCha8 generator seeded from crypto/rand instead of reading
// crypto/rand per call: `hub exec --stdio` makes one per line. One
// goroutine uses it.
type turnIDs struct {
	prefix string
	rng    *rand.ChaCha8
	sec    int64
	stamp  []byte // prefix.20060102T150405Z- of sec
}

func newTurnIDs(prefix string) *turnIDs {
	var seed [32]byte
	_, _ = crand.Read(seed[:])
	return &turnIDs{prefix: prefix, rng: rand.NewChaCha8(seed)}
}

func (t *turnIDs) next(now time.Time) string {
	if s := now.Unix(); t.stamp == nil || s != t.sec {
		t.sec = s
		t.stamp = now.UTC().AppendFormat(append([]byte(t.prefix), '.'), "20060102T150405Z")
		t.stamp = append(t.stamp, '-')
	}
	var r [8]byte
	binary.LittleEndian.PutUint64(r[:], t.rng.Uint64())
	var id strings.Builder
	id.Grow(len(t.stamp) + hex.EncodedLen(6))
	id.Write(t.stamp)
	var digits [12]byte
	hex.Encode(digits[:], r[:6])
	id.Write(digits[:])
	return id.String()
}
