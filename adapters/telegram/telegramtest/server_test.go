package telegramtest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// call posts one Bot API method to s and returns the HTTP status and the
// decoded answer (nil when the body is not JSON).
func call(t *testing.T, ctx context.Context, s *Server, method string, params url.Values) (int, map[string]any, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL()+"/bot"+s.Token()+"/"+method, strings.NewReader(params.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if json.Unmarshal(body, &m) != nil {
		m = nil
	}
	return resp.StatusCode, m, nil
}

func send(t *testing.T, s *Server, text string) (int, map[string]any) {
	t.Helper()
	code, m, err := call(t, context.Background(), s, "sendMessage", url.Values{"chat_id": {"7"}, "text": {text}})
	if err != nil {
		t.Fatalf("sendMessage: %v", err)
	}
	return code, m
}

func TestRuleAnswersEveryNthCallCountTimes(t *testing.T) {
	s := NewServer()
	defer s.Close()
	s.AddRule(Rule{Method: "sendMessage", Every: 2, Count: 2, Fault: TooManyRequests(3)})
	var codes []int
	for i := range 6 {
		code, m := send(t, s, "m"+string(rune('a'+i)))
		codes = append(codes, code)
		if code == 429 {
			p, _ := m["parameters"].(map[string]any)
			if p["retry_after"] != float64(3) {
				t.Fatalf("429 without retry_after 3: %v", m)
			}
		}
	}
	want := []int{200, 429, 200, 429, 200, 200}
	for i := range want {
		if codes[i] != want[i] {
			t.Fatalf("codes %v, want %v", codes, want)
		}
	}
	if !s.RulesDone() {
		t.Fatal("the rule fired twice but is not done")
	}
	if n := len(s.Messages()); n != 4 {
		t.Fatalf("%d messages accepted, want 4", n)
	}
	calls := s.CallsOf("sendMessage")
	if calls[1].Fault == "" || calls[0].Fault != "" {
		t.Fatalf("fault records: %q, %q", calls[0].Fault, calls[1].Fault)
	}
}

func TestInjectedFaultsComeFirstAndOnce(t *testing.T) {
	s := NewServer()
	defer s.Close()
	s.Inject("sendMessage", ServerError(502), Fault{HTMLStatus: 503})
	if code, _ := send(t, s, "a"); code != 502 {
		t.Fatalf("first call %d, want 502", code)
	}
	if code, m := send(t, s, "b"); code != 503 || m != nil {
		t.Fatalf("second call %d %v, want an HTML 503", code, m)
	}
	if code, _ := send(t, s, "c"); code != 200 {
		t.Fatalf("third call %d, want 200", code)
	}
}

func TestHungAnswerEndsWithTheCallerAndHasNoEffect(t *testing.T) {
	s := NewServer()
	defer s.Close()
	s.Inject("sendMessage", Fault{Hang: true})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, _, err := call(t, ctx, s, "sendMessage", url.Values{"chat_id": {"7"}, "text": {"x"}})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v, want the caller's deadline", err)
	}
	if n := len(s.Messages()); n != 0 {
		t.Fatalf("a hung call was acted on: %d messages", n)
	}
}

func TestSlowAnswerSucceeds(t *testing.T) {
	s := NewServer()
	defer s.Close()
	s.Inject("sendMessage", Fault{Delay: 20 * time.Millisecond})
	if code, _ := send(t, s, "slow"); code != 200 {
		t.Fatalf("slow call %d, want 200", code)
	}
	if n := len(s.Messages()); n != 1 {
		t.Fatalf("%d messages, want 1", n)
	}
}

func TestDropClosesWithoutAnswer(t *testing.T) {
	s := NewServer()
	defer s.Close()
	s.Inject("sendMessage", Fault{Drop: true})
	if _, _, err := call(t, context.Background(), s, "sendMessage", url.Values{"chat_id": {"7"}, "text": {"x"}}); err == nil {
		t.Fatal("a dropped connection answered")
	}
	if n := len(s.Messages()); n != 0 {
		t.Fatalf("a dropped call was acted on: %d messages", n)
	}
}

func TestDownRefusedThenUpOnTheSamePort(t *testing.T) {
	s := NewServer()
	defer s.Close()
	before := s.URL()
	s.Down(Refused)
	_, _, err := call(t, context.Background(), s, "getMe", nil)
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("while down: %v, want connection refused", err)
	}
	if err := s.Up(); err != nil {
		t.Fatal(err)
	}
	if s.URL() != before {
		t.Fatalf("came back at %s, was %s", s.URL(), before)
	}
	if code, _, err := call(t, context.Background(), s, "getMe", nil); err != nil || code != 200 {
		t.Fatalf("after up: %d %v", code, err)
	}
}

func TestDownUnavailableAnswers503(t *testing.T) {
	s := NewServer()
	defer s.Close()
	s.Down(Unavailable)
	if code, m, err := call(t, context.Background(), s, "getMe", nil); err != nil || code != 503 || m != nil {
		t.Fatalf("while unavailable: %d %v %v", code, m, err)
	}
	if err := s.Up(); err != nil {
		t.Fatal(err)
	}
	if code, _, _ := call(t, context.Background(), s, "getMe", nil); code != 200 {
		t.Fatalf("after up: %d", code)
	}
}

func TestUpdatesAreRedeliveredUntilConfirmed(t *testing.T) {
	s := NewServer()
	defer s.Close()
	a, b := NextUpdateID(), NextUpdateID()
	s.Push(TextUpdate(a, 1, 1, 10, "/whoami"), TextUpdate(b, 1, 1, 11, "/verbs"))
	ids := func(offset int) []float64 {
		p := url.Values{"timeout": {"0"}}
		if offset != 0 {
			p.Set("offset", strconv.Itoa(offset))
		}
		_, m, err := call(t, context.Background(), s, "getUpdates", p)
		if err != nil {
			t.Fatal(err)
		}
		var out []float64
		for _, u := range m["result"].([]any) {
			out = append(out, u.(map[string]any)["update_id"].(float64))
		}
		return out
	}
	if got := ids(0); len(got) != 2 {
		t.Fatalf("first answer %v", got)
	}
	s.DuplicateNextUpdates()
	if got := ids(0); len(got) != 4 {
		t.Fatalf("a duplicated answer holds %v, want both updates twice", got)
	}
	if got := ids(b); len(got) != 1 || got[0] != float64(b) {
		t.Fatalf("after confirming %d: %v", a, got)
	}
	if s.Offset() != int64(b) || s.Queued() != 1 {
		t.Fatalf("offset %d queued %d", s.Offset(), s.Queued())
	}
	if d := s.Delivered(); len(d) != 2 || d[0] != int64(a) || d[1] != int64(b) {
		t.Fatalf("delivered %v", d)
	}
}

func TestUpdatesComeInIDOrder(t *testing.T) {
	s := NextUpdateID()
	a, b := NextUpdateID(), NextUpdateID()
	srv := NewServer()
	defer srv.Close()
	srv.Push(TextUpdate(b, 1, 1, 2, "/verbs"), TextUpdate(a, 1, 1, 1, "/whoami"), TextUpdate(s, 1, 1, 0, "/help"))
	_, m, err := call(t, context.Background(), srv, "getUpdates", url.Values{"timeout": {"0"}})
	if err != nil {
		t.Fatal(err)
	}
	var got []float64
	for _, u := range m["result"].([]any) {
		got = append(got, u.(map[string]any)["update_id"].(float64))
	}
	if len(got) != 3 || got[0] != float64(s) || got[1] != float64(a) || got[2] != float64(b) {
		t.Fatalf("update ids %v, want %d %d %d", got, s, a, b)
	}
}

func TestLongPollWakesOnPush(t *testing.T) {
	s := NewServer()
	defer s.Close()
	done := make(chan int, 1)
	go func() {
		_, m, err := call(t, context.Background(), s, "getUpdates", url.Values{"timeout": {"30"}})
		if err != nil {
			done <- -1
			return
		}
		done <- len(m["result"].([]any))
	}()
	for len(s.CallsOf("getUpdates")) == 0 {
		time.Sleep(time.Millisecond)
	}
	s.Push(TextUpdate(NextUpdateID(), 1, 1, 12, "/whoami"))
	select {
	case n := <-done:
		if n != 1 {
			t.Fatalf("long poll returned %d updates", n)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the long poll did not wake up")
	}
}

func TestWrongTokenIsUnauthorized(t *testing.T) {
	s := NewServer()
	defer s.Close()
	tok := s.Token()
	s.SetToken("999:other")
	req, _ := http.NewRequest(http.MethodPost, s.URL()+"/bot"+tok+"/getMe", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Fatalf("status %d, want 401", resp.StatusCode)
	}
}

// TestMessageLimits: the fake refuses what Telegram refuses as too long,
// counting the text as shown: HTML tags and entities do not count.
func TestMessageLimits(t *testing.T) {
	s := NewServer()
	defer s.Close()
	sendHTML := func(method string, p url.Values) (int, string) {
		t.Helper()
		p.Set("chat_id", "7")
		p.Set("parse_mode", "HTML")
		code, m, err := call(t, context.Background(), s, method, p)
		if err != nil {
			t.Fatal(err)
		}
		d, _ := m["description"].(string)
		return code, d
	}
	// 4096 shown, far more sent: every "&lt;" and "<b></b>" shows as one
	// character or none.
	full := "<b>" + strings.Repeat("&lt;", 2048) + "</b>" + strings.Repeat("é", 2048)
	if code, d := sendHTML("sendMessage", url.Values{"text": {full}}); code != 200 {
		t.Fatalf("a text of %d shown units: %d %s", MaxText, code, d)
	}
	if code, d := sendHTML("sendMessage", url.Values{"text": {full + "x"}}); code != 400 || d != "Bad Request: message is too long" {
		t.Fatalf("one unit over: %d %q", code, d)
	}
	// A character outside the BMP is two units, as Telegram counts.
	if code, d := sendHTML("sendMessage", url.Values{"text": {strings.Repeat("x", MaxText-1) + "😀"}}); code != 400 {
		t.Fatalf("%d units ending in a surrogate pair: %d %q", MaxText+1, code, d)
	}
	id := strconv.Itoa(int(s.Messages()[0].MessageID))
	if code, d := sendHTML("editMessageText", url.Values{"message_id": {id}, "text": {strings.Repeat("y", MaxText+1)}}); code != 400 || d != "Bad Request: message is too long" {
		t.Fatalf("an edit over the limit: %d %q", code, d)
	}
	if n := len(s.Messages()); n != 1 || s.Messages()[0].Text != full {
		t.Fatalf("%d messages kept, or the first was edited", n)
	}
}
