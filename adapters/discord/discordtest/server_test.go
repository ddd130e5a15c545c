package discordtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

func post(t *testing.T, ctx context.Context, s *Server, path string, body any) (int, error) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.APIBase()+path, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

func channelPost(t *testing.T, s *Server, content, nonce string) int {
	t.Helper()
	code, err := post(t, context.Background(), s, "/channels/"+s.ChannelID+"/messages",
		map[string]any{"content": content, "nonce": nonce, "enforce_nonce": true})
	if err != nil {
		t.Fatal(err)
	}
	return code
}

func TestNonceRepeatCreatesNothingNew(t *testing.T) {
	s := NewServer()
	defer s.Close()
	for _, p := range []struct{ content, nonce string }{{"one", "n1"}, {"one", "n1"}, {"two", "n2"}} {
		if code := channelPost(t, s, p.content, p.nonce); code != 200 {
			t.Fatalf("post %q with nonce %s: status %d", p.content, p.nonce, code)
		}
	}
	if n := len(s.ChannelMessages(s.ChannelID)); n != 2 {
		t.Fatalf("%d channel messages, want 2", n)
	}
	rs := s.Receipts()
	if len(rs) != 3 || rs[0].Repeat || !rs[1].Repeat || rs[1].MessageID != rs[0].MessageID || rs[2].Repeat {
		t.Fatalf("receipts %+v", rs)
	}
}

func TestRuleSchedulesFaultsByPath(t *testing.T) {
	s := NewServer()
	defer s.Close()
	s.AddRule(Rule{Every: 3, Count: 1, Fault: RateLimit(http.MethodPost, "/channels/", 0.5)})
	var codes []int
	for i := range 5 {
		codes = append(codes, channelPost(t, s, "m", string(rune('a'+i))))
	}
	want := []int{200, 200, 429, 200, 200}
	for i := range want {
		if codes[i] != want[i] {
			t.Fatalf("codes %v, want %v", codes, want)
		}
	}
	if !s.RulesDone() {
		t.Fatal("rule not done")
	}
	s.FailNext(ServerError(http.MethodPost, "/channels/", 502))
	if c := channelPost(t, s, "x", "x"); c != 502 {
		t.Fatalf("queued fault: %d", c)
	}
}

func TestHungRequestEndsWithTheCaller(t *testing.T) {
	s := NewServer()
	defer s.Close()
	s.FailNext(Fault{Method: http.MethodPost, PathPrefix: "/channels/", Hang: true})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := post(t, ctx, s, "/channels/"+s.ChannelID+"/messages", map[string]any{"content": "x"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v, want the caller's deadline", err)
	}
	if n := len(s.Receipts()); n != 0 {
		t.Fatalf("a hung request created %d messages", n)
	}
}

// dial connects to the gateway and identifies with token.
func dial(t *testing.T, s *Server, token string) *websocket.Conn {
	t.Helper()
	ws, _, err := websocket.DefaultDialer.Dial("ws"+s.URL()[len("http"):]+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	var hello map[string]any
	if err := ws.ReadJSON(&hello); err != nil || hello["op"] != float64(10) {
		t.Fatalf("hello %v %v", hello, err)
	}
	if err := ws.WriteJSON(map[string]any{"op": 2, "d": map[string]any{"token": "Bot " + token}}); err != nil {
		t.Fatal(err)
	}
	return ws
}

func readEvent(t *testing.T, ws *websocket.Conn) (string, map[string]any) {
	t.Helper()
	_ = ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	var f struct {
		T string         `json:"t"`
		D map[string]any `json:"d"`
	}
	if err := ws.ReadJSON(&f); err != nil {
		t.Fatal(err)
	}
	return f.T, f.D
}

func TestDispatchGoesToTheLatestIdentifiedClient(t *testing.T) {
	s := NewServer()
	defer s.Close()
	if _, written := s.Dispatch("MESSAGE_CREATE", map[string]any{"id": "1"}); written {
		t.Fatal("written with no client")
	}
	first := dial(t, s, DefaultToken)
	defer first.Close()
	for _, want := range []string{"READY", "GUILD_CREATE"} {
		if typ, _ := readEvent(t, first); typ != want {
			t.Fatalf("got %s, want %s", typ, want)
		}
	}
	// A restarted bot identifies again: the new connection gets the events.
	second := dial(t, s, DefaultToken)
	defer second.Close()
	readEvent(t, second)
	readEvent(t, second)
	if _, written := s.Dispatch("INTERACTION_CREATE", map[string]any{"id": "2"}); !written {
		t.Fatal("not written to the connected client")
	}
	typ, d := readEvent(t, second)
	if typ != "INTERACTION_CREATE" || d["id"] != "2" {
		t.Fatalf("second client got %s %v", typ, d)
	}
	if n := len(s.Identifies()); n != 2 {
		t.Fatalf("%d identifies", n)
	}
}

func TestWrongTokenIsRefused(t *testing.T) {
	s := NewServer()
	defer s.Close()
	ws := dial(t, s, "wrong")
	defer ws.Close()
	_, _, err := ws.ReadMessage()
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != 4004 {
		t.Fatalf("err %v, want close 4004", err)
	}
	if s.Connected() {
		t.Fatal("connected with a wrong token")
	}
}

func TestDownRefusedThenUp(t *testing.T) {
	s := NewServer()
	defer s.Close()
	ws := dial(t, s, DefaultToken)
	defer ws.Close()
	readEvent(t, ws)
	s.Down(Refused)
	if s.Connected() {
		t.Fatal("the gateway connection survived Down")
	}
	if _, err := post(t, context.Background(), s, "/channels/1/messages", map[string]any{"content": "x"}); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("while down: %v", err)
	}
	if err := s.Up(); err != nil {
		t.Fatal(err)
	}
	if c := channelPost(t, s, "back", "b"); c != 200 {
		t.Fatalf("after up: %d", c)
	}
	s.Down(Unavailable)
	if c, err := post(t, context.Background(), s, "/channels/1/messages", map[string]any{"content": "x"}); err != nil || c != 503 {
		t.Fatalf("unavailable: %d %v", c, err)
	}
}

// TestContentLimit: content over MaxContent UTF-16 units is refused as
// Discord refuses it, on every route that takes content.
func TestContentLimit(t *testing.T) {
	s := NewServer()
	defer s.Close()
	if code := channelPost(t, s, strings.Repeat("é", MaxContent), "n1"); code != 200 {
		t.Fatalf("%d units: %d", MaxContent, code)
	}
	if code := channelPost(t, s, strings.Repeat("x", MaxContent-1)+"😀", "n2"); code != 400 {
		t.Fatalf("%d units: %d, want 400", MaxContent+1, code)
	}
	if code, err := post(t, context.Background(), s, "/interactions/930000000000000001/tok-1/callback", map[string]any{"type": 5}); err != nil || code != 204 {
		t.Fatalf("deferral: %d %v", code, err)
	}
	code, err := post(t, context.Background(), s, "/webhooks/"+s.AppID+"/tok-1", map[string]any{"content": strings.Repeat("x", MaxContent+1)})
	if err != nil || code != 400 {
		t.Fatalf("a follow-up over the limit: %d %v", code, err)
	}
	if n := len(s.ChannelMessages(s.ChannelID)); n != 1 {
		t.Fatalf("%d channel messages, want 1", n)
	}
}
