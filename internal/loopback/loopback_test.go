package loopback

import (
	"context"
	"errors"
	"io"
	"net/http"
	"syscall"
	"testing"
	"time"
)

func TestDownRefusesAndUpReturnsOnTheSamePort(t *testing.T) {
	s, err := New(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	addr := s.Addr()
	get := func() error {
		tr := &http.Transport{DisableKeepAlives: true}
		defer tr.CloseIdleConnections()
		resp, err := (&http.Client{Transport: tr}).Get("http://" + addr + "/")
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	if err := get(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ { // down right after up must refuse, every time
		s.Down()
		if err := get(); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("round %d while down: %v, want connection refused", i, err)
		}
		if err := s.Up(); err != nil {
			t.Fatal(err)
		}
		if s.Addr() != addr {
			t.Fatalf("came back on %s, was %s", s.Addr(), addr)
		}
	}
	if err := get(); err != nil {
		t.Fatalf("after up: %v", err)
	}
}

func TestHoldEndsWithTheServer(t *testing.T) {
	s, err := New(http.NotFoundHandler())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan bool)
	go func() { done <- s.Hold(context.Background(), -1) }()
	s.Close()
	select {
	case full := <-done:
		if full {
			t.Fatal("Hold reported a full wait after Close")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Hold did not end with Close")
	}
	if err := s.Up(); err == nil {
		t.Fatal("Up after Close succeeded")
	}
}
