package executor_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/a6afc2ce/hermes-hub/executor"
)

// memSink is a FileSink in memory.
type memSink struct{ files map[string][]byte }

func (m *memSink) Put(_ context.Context, r io.Reader, max int64) (string, int64, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return "", 0, err
	}
	if max > 0 && int64(len(b)) > max {
		return "", 0, fmt.Errorf("over %d bytes", max)
	}
	s := sha256.Sum256(b)
	sha := hex.EncodeToString(s[:])
	if m.files == nil {
		m.files = map[string][]byte{}
	}
	m.files[sha] = b
	return sha, int64(len(b)), nil
}

type sendArgs struct {
	Text string `json:"text"`
	Fail bool   `json:"fail,omitempty"`
}

func sendRegistry() *executor.Registry {
	reg := executor.NewRegistry()
	executor.MustRegister(reg, executor.Info{Name: "x.send", Summary: "Send a file", Aliases: []string{"get"}},
		executor.VerbFunc[sendArgs, EchoResult](func(ctx context.Context, a sendArgs) (EchoResult, error) {
			if _, err := executor.SendFile(ctx, "a.txt", "text/plain", int64(len(a.Text)), strings.NewReader(a.Text)); err != nil {
				return EchoResult{}, err
			}
			if a.Fail {
				return EchoResult{}, executor.Errorf(executor.CodeIOError, "failed after sending")
			}
			return EchoResult{Args: []byte(`{}`)}, nil
		}))
	return reg
}

func TestSendFile(t *testing.T) {
	x := executor.New(sendRegistry(), executor.Options{})
	sink := &memSink{}
	ctx := executor.WithFiles(context.Background(), executor.FileOffer{Sink: sink, Limit: 10, Where: "Testland"})

	out := x.ExecuteInput(ctx, []byte(`{"verb":"x.send","arguments":{"text":"hello"}}`))
	if out.Err != nil || len(out.Files) != 1 {
		t.Fatalf("send: %+v %+v", out.Err, out.Files)
	}
	f := out.Files[0]
	if f.Name != "a.txt" || f.Size != 5 || !bytes.Equal(sink.files[f.SHA256], []byte("hello")) {
		t.Fatalf("sent %+v", f)
	}
	// Over the platform's limit: refused before anything is stored.
	out = x.ExecuteInput(ctx, []byte(`{"verb":"x.send","arguments":{"text":"hello world!"}}`))
	if out.Err == nil || out.Err.Code != executor.CodeTooLarge || !strings.Contains(out.Err.Message, "the largest file Testland takes") {
		t.Fatalf("over the limit: %+v", out.Err)
	}
	// A call that fails delivers none of the files it sent.
	out = x.ExecuteInput(ctx, []byte(`{"verb":"x.send","arguments":{"text":"hi","fail":true}}`))
	if out.Err == nil || len(out.Files) != 0 {
		t.Fatalf("failed call: %+v files %+v", out.Err, out.Files)
	}
	// No offer: the verb hears so.
	out = x.ExecuteInput(context.Background(), []byte(`{"verb":"x.send","arguments":{"text":"hi"}}`))
	if out.Err == nil || !strings.Contains(out.Err.Message, executor.ErrNoFiles.Error()) {
		t.Fatalf("without an offer: %+v", out.Err)
	}
}

func TestChatNames(t *testing.T) {
	reg := sendRegistry()
	x := executor.New(reg, executor.Options{})
	for _, name := range []string{"get", "GET", "x.send", "x_send"} {
		if info, ok := reg.Lookup(name); !ok || info.Name != "x.send" {
			t.Errorf("lookup %q: %+v %v", name, info, ok)
		}
	}
	cmd, err := x.ParseCommand("/get hello")
	if err != nil || cmd.Verb != "x.send" || string(cmd.Arguments) != `{"text":"hello"}` {
		t.Fatalf("/get: %+v %v", cmd, err)
	}
	if n := len(reg.Verbs()); n != 1 {
		t.Fatalf("an alias is listed as a verb: %d verbs", n)
	}
	noop := executor.VerbFunc[sendArgs, EchoResult](func(context.Context, sendArgs) (EchoResult, error) { return EchoResult{}, nil })
	for _, c := range []struct {
		info executor.Info
		want string
	}{
		{executor.Info{Name: "y.one", Aliases: []string{"get"}}, `alias "get" is x.send's already`},
		{executor.Info{Name: "y.two", Aliases: []string{"help"}}, "is a built-in command"},
		{executor.Info{Name: "y.three", Aliases: []string{"Up"}}, "accepted: lower-case letters"},
	} {
		if err := executor.Register(reg, c.info, noop); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.info.Name, err, c.want)
		}
	}
}

func TestUploadContextAndGrant(t *testing.T) {
	if executor.UploadFrom(context.Background()) != nil {
		t.Fatal("an upload out of nowhere")
	}
	u := &executor.Upload{Name: "a.pdf", Size: 3}
	if got := executor.UploadFrom(executor.WithUpload(context.Background(), u)); got != u {
		t.Fatalf("upload %v", got)
	}
	if g := (executor.Info{Name: "fs.upload", Permission: "fs.writeFile"}).Grant(); g != "fs.writeFile" {
		t.Fatalf("grant %q", g)
	}
	if g := (executor.Info{Name: "fs.send"}).Grant(); g != "fs.send" {
		t.Fatalf("grant %q", g)
	}
	reg := executor.NewRegistry()
	if _, ok := reg.Uploader(); ok {
		t.Fatal("an uploader in an empty registry")
	}
	executor.MustRegister(reg, executor.Info{Name: "x.save", TakesFile: true},
		executor.VerbFunc[sendArgs, EchoResult](func(context.Context, sendArgs) (EchoResult, error) { return EchoResult{}, nil }))
	if info, ok := reg.Uploader(); !ok || info.Name != "x.save" {
		t.Fatalf("uploader %+v", info)
	}
}

// TestPositionalBesideBooleans: a verb whose optional argument is marked
// positional takes it by position beside an optional boolean given by key
// (/upload PATH overwrite=true).
func TestPositionalBesideBooleans(t *testing.T) {
	type upArgs struct {
		Path      string `json:"path,omitempty" positional:"true"`
		Overwrite bool   `json:"overwrite,omitempty"`
	}
	reg := executor.NewRegistry()
	executor.MustRegister(reg, executor.Info{Name: "x.up", Aliases: []string{"up"}},
		executor.VerbFunc[upArgs, EchoResult](func(context.Context, upArgs) (EchoResult, error) { return EchoResult{}, nil }))
	x := executor.New(reg, executor.Options{})
	for text, want := range map[string]string{
		"/up reports/q3.pdf":                `{"path":"reports/q3.pdf"}`,
		"/up reports/q3.pdf overwrite=true": `{"path":"reports/q3.pdf","overwrite":true}`,
		"/up":                               `{}`,
	} {
		cmd, err := x.ParseCommand(text)
		if err != nil || string(cmd.Arguments) != want {
			t.Errorf("%s: %s %v, want %s", text, cmd.Arguments, err, want)
		}
	}
	if _, err := x.ParseCommand("/up a b"); err == nil {
		t.Error("two positionals for one field were accepted")
	}
}

// TestAliasNotAChatName: a named command cannot take a name chat already
// gives a verb (/get is x.send's), which would leave one of them
// unreachable from chat.
func TestAliasNotAChatName(t *testing.T) {
	reg := sendRegistry()
	get := executor.Alias{Info: executor.Info{Name: "cmd.get", Summary: "Get"}, Target: "x.send",
		Expand: func(json.RawMessage) (executor.Envelope, error) {
			return executor.Envelope{Verb: "x.send", Arguments: json.RawMessage(`{"text":"hi"}`)}, nil
		}}
	if err := reg.ReplaceAliases("cmd.", []executor.Alias{get}); err == nil || !strings.Contains(err.Error(), "/get is already x.send's name in chat") {
		t.Fatalf("an alias named as a chat name: %v", err)
	}
	get.Info.Name = "cmd.fetch"
	if err := reg.ReplaceAliases("cmd.", []executor.Alias{get}); err != nil {
		t.Fatal(err)
	}
	if info, ok := reg.Lookup("get"); !ok || info.Name != "x.send" {
		t.Fatalf("/get: %+v %v", info, ok)
	}
}
