package discord

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/adapters/discord/discordtest"
)

// TestCheckToken: the shape of a token, then what Discord says of it (GET
// /users/@me): the bot's name, a rejection (ErrTokenRejected), or no
// answer; no error holds the token.
func TestCheckToken(t *testing.T) {
	const shaped = "MTAwMDAwMDAwMDAwMDAwMDAx.GhUb-x.fake0123456789abcdefghijklmnopqrstuv"
	for tok, ok := range map[string]bool{
		shaped: true, "a.b.c": true,
		"": false, "Bot " + shaped: false, "abc": false, "a.b": false, "a.b.c.d": false, "a b.c.d": false,
	} {
		if err := CheckTokenShape(tok); (err == nil) != ok {
			t.Errorf("CheckTokenShape(%q) = %v", tok, err)
		} else if err != nil && tok != "" && strings.Contains(err.Error(), tok) {
			t.Errorf("the shape error repeats the token: %v", err)
		}
	}
	srv := discordtest.NewServer()
	defer srv.Close()
	srv.SetToken(shaped)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	name, err := CheckToken(ctx, shaped, srv.APIBase())
	if err != nil || name != discordtest.BotUsername {
		t.Fatalf("accepted token: %q %v", name, err)
	}
	const wrong = "MTAw.WRONG-secret.value0123456789"
	if _, err := CheckToken(ctx, wrong, srv.APIBase()); !errors.Is(err, ErrTokenRejected) || strings.Contains(err.Error(), "WRONG-secret") {
		t.Fatalf("rejected token: %v", err)
	}
	// Not Discord's answer: a base that does not serve /users/@me.
	if _, err := CheckToken(ctx, shaped, srv.URL()); err == nil || errors.Is(err, ErrTokenRejected) || !strings.Contains(err.Error(), "check discord.api_base") {
		t.Fatalf("wrong api_base: %v", err)
	}
	srv.Close()
	if _, err := CheckToken(ctx, wrong, srv.APIBase()); err == nil || errors.Is(err, ErrTokenRejected) || strings.Contains(err.Error(), "WRONG-secret") {
		t.Fatalf("unreachable API: %v", err)
	}
}
