package outbox

import (
	"encoding/json"
	"testing"
)

// TestIndexRecordCodec: the index records written without reflection are
// byte for byte what json.Marshal writes, and read back the same; records
// with characters JSON escapes take json.Marshal's way.
func TestIndexRecordCodec(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    indexRecord
		fast bool
	}{
		{"pending", indexRecord{State: StatePending, Target: "chat:telegram:1", Seq: 42}, true},
		{"delivered", indexRecord{State: StateDelivered, Target: "chat:discord:9:thread", At: 1_790_000_000_123_456_789, MsgID: "m-1"}, true},
		{"delivered without message id", indexRecord{State: StateDelivered, Target: "web", At: 1}, true},
		{"dead", indexRecord{State: StateDead, Target: "local:out/x.jsonl", At: 7}, true},
		{"empty", indexRecord{}, true},
		{"largest numbers", indexRecord{State: StatePending, Target: "web", Seq: 1<<64 - 1, At: 1<<63 - 1}, true},
		{"negative time", indexRecord{State: StateDelivered, Target: "web", At: -5}, true},
		{"quote in a message id", indexRecord{State: StateDelivered, Target: "web", At: 1, MsgID: `a"b`}, false},
		{"html characters", indexRecord{State: StateDelivered, Target: "local:a&b<c>.jsonl", At: 1}, false},
		{"non-ascii", indexRecord{State: StatePending, Target: "local:é.jsonl", Seq: 1}, false},
		{"control character", indexRecord{State: StatePending, Target: "web\n", Seq: 1}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, err := json.Marshal(&tc.r)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := appendIndex(nil, &tc.r)
			if ok != tc.fast {
				t.Fatalf("appendIndex took the fast way: %v, want %v", ok, tc.fast)
			}
			if ok && string(got) != string(want) {
				t.Fatalf("appendIndex wrote %s, json.Marshal %s", got, want)
			}
			checkParseIndex(t, want)
		})
	}
}

// checkParseIndex fails if parseIndex accepts v and reads it differently
// from json.Unmarshal.
func checkParseIndex(t *testing.T, v []byte) {
	t.Helper()
	got, ok := parseIndex(v)
	if !ok {
		return
	}
	var want indexRecord
	if err := json.Unmarshal(v, &want); err != nil {
		t.Fatalf("parseIndex accepted %q, which json.Unmarshal refuses: %v", v, err)
	}
	if got != want {
		t.Fatalf("parseIndex read %q as %+v, json.Unmarshal as %+v", v, got, want)
	}
}

// FuzzIndexRecord: for any record, appendIndex writes what json.Marshal
// does (or declines) and parseIndex reads it back; for any bytes,
// parseIndex either declines or agrees with json.Unmarshal.
func FuzzIndexRecord(f *testing.F) {
	f.Add("pending", "chat:telegram:1", uint64(3), int64(0), "", []byte(`{"s":"pending","t":"chat:telegram:1","q":3}`))
	f.Add("delivered", "web", uint64(0), int64(1790000000000000000), "m-1", []byte(`{"s":"delivered","t":"web","a":5,"m":"x"}`))
	f.Add("dead", "local:a.jsonl", uint64(0), int64(-1), `"`, []byte(`{"s":"dead","t":"x","a":05}`))
	f.Add("", "", uint64(1), int64(1), "<", []byte(`{"s":"pending","t":"x","q":18446744073709551616}`))
	f.Fuzz(func(t *testing.T, state, target string, seq uint64, at int64, msg string, raw []byte) {
		r := indexRecord{State: State(state), Target: target, Seq: seq, At: at, MsgID: msg}
		want, err := json.Marshal(&r)
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := appendIndex(nil, &r); ok {
			if string(got) != string(want) {
				t.Fatalf("appendIndex wrote %s, json.Marshal %s", got, want)
			}
			if back, ok := parseIndex(got); ok && back != r {
				t.Fatalf("parseIndex read %s as %+v, want %+v", got, back, r)
			}
		}
		checkParseIndex(t, want)
		checkParseIndex(t, raw)
	})
}
