package store

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"
	"time"
)

// Outcomes of a turn, as an audit search reads them from the records of
// the turn (docs/chatops.md, "An audit you can search").
const (
	// OutcomeSucceeded: an answer without an error code (a verb that
	// succeeded, a builtin).
	OutcomeSucceeded = "succeeded"
	// OutcomeFailed: an answer with an error code other than the two of a
	// refusal (the verb failed, the call did not parse, …).
	OutcomeFailed = "failed"
	// OutcomeForbidden: refused by the roles or the workspace rules
	// (forbidden), or a path outside the workspace (forbidden_path).
	OutcomeForbidden = "forbidden"
	// OutcomeDenied: from an identity with no role (kind denied).
	OutcomeDenied = "denied"
	// OutcomeInterrupted: the hub restarted during the turn (a notice).
	OutcomeInterrupted = "interrupted"
)

// AuditOutcomes are the outcomes a search may ask for.
var AuditOutcomes = []string{OutcomeSucceeded, OutcomeFailed, OutcomeForbidden, OutcomeDenied, OutcomeInterrupted}

// requestKinds are the kinds of inbound records that start a turn.
var requestKinds = map[string]bool{
	KindMessage: true, KindCommand: true, KindEdited: true, KindDenied: true, KindSchedule: true,
	"execute": true, "cli": true,
}

// AuditQuery selects turns from the mirrors (hub mirror search, GET
// /api/mirror/search). Empty fields select everything.
type AuditQuery struct {
	// Identity is the identity that asked (the request's actor), exactly.
	Identity string
	// Chat is where: a platform (telegram, web, api, schedule, cli), a
	// chat (telegram:-1001234567890, schedule:nightly) or a topic
	// (telegram:-1001234567890:7); chat: in front is allowed. A chat
	// selects its topics.
	Chat string
	// Verb is a verb's name or a glob (fs.*), in any case.
	Verb string
	// Workspace is the workspace the call acted in.
	Workspace string
	// Outcome is one of AuditOutcomes.
	Outcome string
	// Since and Until bound the time of the request: Since <= ts < Until
	// (zero: open).
	Since, Until time.Time
	// Limit stops the search after that many turns (0: all).
	Limit int
	// OnBadLine is told about a line that is not a record; nil skips.
	OnBadLine func(path string, line int, err error)
}

// AuditTurn is one turn a search found: its request joined, by turn id,
// with the first record that answered it.
type AuditTurn struct {
	TS        time.Time `json:"ts"`
	RunID     string    `json:"run_id"`
	TurnID    string    `json:"turn_id"`
	Platform  string    `json:"platform"`
	Chat      string    `json:"chat"`
	Identity  string    `json:"identity"`
	Kind      string    `json:"kind"`
	Verb      string    `json:"verb,omitempty"`
	Workspace string    `json:"workspace,omitempty"`
	// Outcome is "" while no record says how the turn ended (no answer
	// yet, a message the hub did not answer).
	Outcome   string `json:"outcome,omitempty"`
	ErrorCode string `json:"error_code,omitempty"`
	// Request and Answer are the previews of the request and of the
	// first answer (the whole texts are in the mirror).
	Request    string    `json:"request"`
	Answer     string    `json:"answer,omitempty"`
	AnsweredAt time.Time `json:"answered_at,omitzero"`
}

// Bounds of the join of requests and answers: an answer is looked for
// among the records written within joinWindow after its request, while
// at most maxPending requests wait for theirs. A request whose answer
// does not come in time is reported without an outcome.
const (
	joinWindow = time.Hour
	maxPending = 10000
)

// SearchMirrors calls fn for every turn of the mirrors in flows that q
// selects, in the order of their requests, runs oldest first. It reads
// each file line by line, whatever the size of the mirrors: runs that
// started after q.Until and files whose records all came before q.Since
// are not read, a line is matched on its raw bytes before it is decoded,
// and an answer is decoded only when its request is waiting for it.
// Memory holds one line per direction and the requests waiting for an
// answer (at most maxPending). An error from fn stops the search and is
// returned.
func SearchMirrors(ctx context.Context, flows *os.Root, q AuditQuery, fn func(AuditTurn) error) error {
	m, err := q.compile()
	if err != nil {
		return err
	}
	s := &searcher{m: m, fn: fn, waiting: map[string]*AuditTurn{}, maxPending: maxPending}
	for _, run := range ListRuns(flows) {
		if m.skipRun(run) {
			continue
		}
		if err := s.run(ctx, flows, run); err != nil || s.stop {
			return err
		}
	}
	return s.flush(time.Time{}, true)
}

// matcher is a compiled AuditQuery: the raw bytes a request's line must
// hold, and the checks on its decoded record.
type matcher struct {
	q                      AuditQuery
	platform, chat, thread string
	verb                   string // lower case
	rawActor, rawWS        []byte
	rawPlatform            []byte
	rawDenied, needOutcome bool
}

// Check refuses a query SearchMirrors would refuse, saying what is
// accepted: an outcome not in AuditOutcomes, a verb glob that does not
// parse, an until not after since.
func (q AuditQuery) Check() error {
	_, err := q.compile()
	return err
}

// compile checks q and prepares its raw filters.
func (q AuditQuery) compile() (*matcher, error) {
	m := &matcher{q: q, verb: strings.ToLower(q.Verb), needOutcome: q.Outcome != ""}
	if q.Outcome != "" && !slices.Contains(AuditOutcomes, q.Outcome) {
		return nil, fmt.Errorf("outcome %q is not accepted (accepted: %s)", q.Outcome, strings.Join(AuditOutcomes, ", "))
	}
	if _, err := path.Match(m.verb, "x"); err != nil {
		return nil, fmt.Errorf("verb %q is not a name or a glob such as fs.* (%v)", q.Verb, err)
	}
	if !q.Since.IsZero() && !q.Until.IsZero() && !q.Until.After(q.Since) {
		return nil, fmt.Errorf("until (%s) is not after since (%s)", q.Until.Format(time.RFC3339), q.Since.Format(time.RFC3339))
	}
	if c := strings.TrimPrefix(q.Chat, "chat:"); c != "" {
		parts := strings.SplitN(c, ":", 3)
		m.platform = parts[0]
		if len(parts) > 1 {
			m.chat = parts[1]
		}
		if len(parts) > 2 {
			m.thread = parts[2]
		}
		m.rawPlatform = rawField("platform", m.platform)
	}
	if q.Identity != "" {
		m.rawActor = rawField("actor", q.Identity)
	}
	if q.Workspace != "" {
		m.rawWS = rawField("workspace", q.Workspace)
	}
	m.rawDenied = q.Outcome == OutcomeDenied
	return m, nil
}

// rawField is how the mirror writes the field key with the text value v.
func rawField(key, v string) []byte {
	b, _ := json.Marshal(v)
	return append([]byte(`"`+key+`":`), b...)
}

// skipRun reports whether a run started at or after Until, so that none
// of its records can be selected.
func (m *matcher) skipRun(run string) bool {
	start, err := ParseRunID(run)
	return err == nil && !m.q.Until.IsZero() && !start.Before(m.q.Until.Add(timeSlack))
}

// inTime reports whether t is within Since and Until.
func (m *matcher) inTime(t time.Time) bool {
	return (m.q.Since.IsZero() || !t.Before(m.q.Since)) && (m.q.Until.IsZero() || t.Before(m.q.Until))
}

// rawMatch is the check of a request's line before it is decoded: every
// field asked for must be written in it.
func (m *matcher) rawMatch(line []byte) bool {
	for _, want := range [][]byte{m.rawActor, m.rawWS, m.rawPlatform} {
		if want != nil && !bytes.Contains(line, want) {
			return false
		}
	}
	return !m.rawDenied || bytes.Contains(line, []byte(`"kind":"denied"`))
}

// match checks a decoded request.
func (m *matcher) match(t *AuditTurn, rec *searchRecord) bool {
	switch {
	case m.q.Identity != "" && t.Identity != m.q.Identity:
		return false
	case m.q.Workspace != "" && t.Workspace != m.q.Workspace:
		return false
	case m.platform != "" && (rec.Platform != m.platform || m.chat != "" && rec.ChatID != m.chat || m.thread != "" && rec.ThreadID != m.thread):
		return false
	case m.verb != "":
		ok, _ := path.Match(m.verb, strings.ToLower(t.Verb))
		return ok
	}
	return true
}

// searcher joins requests with their answers and hands the selected
// turns to fn in the order of their requests.
type searcher struct {
	m          *matcher
	fn         func(AuditTurn) error
	queue      []*AuditTurn          // requests selected so far, not yet handed over, in order
	waiting    map[string]*AuditTurn // those still waiting for an answer, by turn id
	maxPending int
	found      int
	stop       bool // the limit was reached
	peak       int  // the most requests held at once (tests)
}

// run reads one run's two directions, merged by time (requests first on
// a tie), as a stream of lines.
func (s *searcher) run(ctx context.Context, flows *os.Root, run string) error {
	srcs := [2]*lineSource{}
	for i, d := range []string{DirectionInbound, DirectionOutbound} {
		srcs[i] = &lineSource{flows: flows, files: mirrorFiles(flows, run, d), since: s.m.q.Since, until: s.m.q.Until, onBad: s.m.q.OnBadLine}
		defer srcs[i].close()
	}
	for n := 0; ; n++ {
		if n%1024 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		i, ts, err := earliest(srcs)
		if err != nil || i < 0 {
			return err
		}
		// Requests waited for longer than the window go first: an answer
		// this late joins nothing.
		if err := s.flush(ts, false); err != nil || s.stop {
			return err
		}
		line, path, num := srcs[i].take()
		if i == 0 {
			s.request(line, path, num, ts, run)
		} else {
			s.answer(line, path, num)
		}
		if err := s.flush(ts, false); err != nil || s.stop {
			return err
		}
	}
}

// earliest is the source whose next line is the earliest (-1 at the end).
func earliest(srcs [2]*lineSource) (int, time.Time, error) {
	best, at := -1, time.Time{}
	for i, src := range srcs {
		ts, ok, err := src.peek()
		if err != nil {
			return -1, time.Time{}, err
		}
		if ok && (best < 0 || ts.Before(at)) {
			best, at = i, ts
		}
	}
	return best, at, nil
}

// request takes an inbound line: a request the query selects is queued,
// waiting for its answer unless its outcome is known already (denied).
func (s *searcher) request(line []byte, path string, num int, ts time.Time, run string) {
	if !s.m.inTime(ts) || !s.m.rawMatch(line) {
		return
	}
	rec, ok := s.decode(line, path, num)
	if !ok {
		return
	}
	t := requestTurn(&rec, run)
	if t == nil || !s.m.match(t, &rec) {
		return
	}
	s.queue = append(s.queue, t)
	if t.Outcome == "" {
		s.waiting[t.TurnID] = t
	}
	s.peak = max(s.peak, len(s.queue))
}

// requestTurn is the turn an inbound record starts, nil for a record that
// starts none (a duplicate delivery, a record without a turn id).
func requestTurn(rec *searchRecord, run string) *AuditTurn {
	id := rec.Meta["turn_id"]
	if id == "" || !requestKinds[rec.Kind] || rec.Meta["duplicate"] != "" {
		return nil
	}
	t := &AuditTurn{
		TS: rec.TS, RunID: run, TurnID: id, Platform: rec.Platform, Chat: chatOf(rec), Identity: rec.Actor,
		Kind: rec.Kind, Verb: requestVerb(rec), Workspace: rec.Meta["workspace"], Request: rec.TextPreview,
	}
	if rec.Kind == KindDenied {
		t.Outcome = OutcomeDenied
	}
	return t
}

// chatOf spells where a record was: platform[:chat[:thread]].
func chatOf(rec *searchRecord) string {
	s := rec.Platform
	if rec.ChatID != "" {
		s += ":" + rec.ChatID
	}
	if rec.ThreadID != "" {
		s += ":" + rec.ThreadID
	}
	return s
}

// requestVerb is the verb a request asked for: its meta's (every record
// the hub writes for a verb call names it), else read from the start of
// its text: a command's name (/verb …) or an envelope's "verb".
func requestVerb(rec *searchRecord) string {
	if v := rec.Meta[MetaVerb]; v != "" {
		return v
	}
	text := strings.TrimSpace(rec.TextPreview)
	if name, ok := strings.CutPrefix(text, "/"); ok {
		name, _, _ = strings.Cut(name, " ")
		name, _, _ = strings.Cut(name, "@")
		return name
	}
	if _, rest, ok := strings.Cut(text, `"verb":"`); ok && strings.HasPrefix(text, "{") {
		name, _, _ := strings.Cut(rest, `"`)
		return name
	}
	return ""
}

// searchRecord is what a search reads of a record: all but its text (the
// preview stands for it), which is skipped, not copied.
type searchRecord struct {
	TS          time.Time         `json:"ts"`
	Platform    string            `json:"platform"`
	ChatID      string            `json:"chat_id"`
	ThreadID    string            `json:"thread_id"`
	Actor       string            `json:"actor"`
	Kind        string            `json:"kind"`
	Meta        map[string]string `json:"meta"`
	TextPreview string            `json:"text_preview"`
}

// decode reads what a search needs of a line; a line that is not a
// record is reported and skipped (ok false).
func (s *searcher) decode(line []byte, path string, num int) (rec searchRecord, ok bool) {
	err := json.Unmarshal(line, &rec)
	if err == nil && rec.Meta == nil {
		rec.Meta = map[string]string{}
	}
	if err != nil && s.m.q.OnBadLine != nil {
		s.m.q.OnBadLine(path, num, fmt.Errorf("not a mirror record: %v", err))
	}
	return rec, err == nil
}

// turnIDKey starts the turn id in an outbound line's meta.
var turnIDKey = []byte(`"turn_id":"`)

// answer takes an outbound line: it is decoded only when the request of
// its turn is waiting, and then gives that request its outcome.
func (s *searcher) answer(line []byte, path string, num int) {
	if len(s.waiting) == 0 {
		return
	}
	if id, ok := rawTurnID(line); ok && s.waiting[id] == nil {
		return
	}
	rec, ok := s.decode(line, path, num)
	if !ok {
		return
	}
	t := s.waiting[rec.Meta["turn_id"]]
	if t == nil {
		return
	}
	delete(s.waiting, t.TurnID)
	t.Outcome, t.ErrorCode = answerOutcome(&rec)
	t.Answer, t.AnsweredAt = rec.TextPreview, rec.TS
	if t.Verb == "" {
		t.Verb = rec.Meta[MetaVerb]
	}
}

// rawTurnID reads the turn id of a line without decoding it; ok is false
// when it cannot (none, or one with escapes).
func rawTurnID(line []byte) (string, bool) {
	i := bytes.Index(line, turnIDKey)
	if i < 0 {
		return "", false
	}
	rest := line[i+len(turnIDKey):]
	end := bytes.IndexByte(rest, '"')
	if end < 0 || bytes.IndexByte(rest[:end], '\\') >= 0 {
		return "", false
	}
	return string(rest[:end]), true
}

// answerOutcome is the outcome an answering record says: a notice that
// the hub restarted, or the error code of the answer (none: succeeded).
func answerOutcome(rec *searchRecord) (outcome, code string) {
	code = rec.Meta[MetaErrorCode]
	switch {
	case rec.Kind == KindNotice:
		return OutcomeInterrupted, code
	case code == "forbidden" || code == "forbidden_path":
		return OutcomeForbidden, code
	case code != "" || rec.Meta["succeeded"] == "false":
		return OutcomeFailed, code
	}
	return OutcomeSucceeded, ""
}

// flush hands over the requests at the head of the queue that are done:
// answered, or waited for long enough (a request joinWindow older than
// now, the time of the line read last, or beyond maxPending); with all,
// every one. Those the outcome asked for does not select are dropped.
func (s *searcher) flush(now time.Time, all bool) error {
	for len(s.queue) > 0 {
		t := s.queue[0]
		_, open := s.waiting[t.TurnID]
		if open && !all && len(s.queue) <= s.maxPending && now.Sub(t.TS) < joinWindow {
			return nil
		}
		s.queue[0] = nil
		s.queue = s.queue[1:]
		delete(s.waiting, t.TurnID)
		if s.m.needOutcome && t.Outcome != s.m.q.Outcome {
			continue
		}
		if err := s.fn(*t); err != nil {
			return err
		}
		if s.found++; s.m.q.Limit > 0 && s.found >= s.m.q.Limit {
			s.stop = true
			return nil
		}
	}
	return nil
}
