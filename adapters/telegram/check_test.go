package telegram

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/adapters/telegram/telegramtest"
)

// TestCheckToken: the shape of a token, then what the Bot API says of it:
// the bot's username, a rejection (ErrTokenRejected), or no answer; no
// error holds the token.
func TestCheckToken(t *testing.T) {
	for tok, ok := range map[string]bool{
		"123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw": true, "123:abc-_DEF": true,
		"": false, "abc:def": false, "123456789": false, "123:ab cd": false, "bot123:abc": false, "123:abc\n": false,
	} {
		if err := CheckTokenShape(tok); (err == nil) != ok {
			t.Errorf("CheckTokenShape(%q) = %v", tok, err)
		} else if err != nil && tok != "" && strings.Contains(err.Error(), tok) {
			t.Errorf("the shape error repeats the token: %v", err)
		}
	}
	srv := telegramtest.NewServer()
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	name, err := CheckToken(ctx, srv.Token(), srv.URL())
	if err != nil || name != telegramtest.DefaultUsername {
		t.Fatalf("accepted token: %q %v", name, err)
	}
	const wrong = "123456:WRONG-secret-value"
	if _, err := CheckToken(ctx, wrong, srv.URL()); !errors.Is(err, ErrTokenRejected) || strings.Contains(err.Error(), "WRONG-secret") {
		t.Fatalf("rejected token: %v", err)
	}
	srv.Close()
	if _, err := CheckToken(ctx, wrong, srv.URL()); err == nil || errors.Is(err, ErrTokenRejected) || strings.Contains(err.Error(), "WRONG-secret") {
		t.Fatalf("unreachable Bot API: %v", err)
	}
}
