package mcp_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	mcpsurface "github.com/a6afc2ce/hermes-hub/adapters/mcp"
	"github.com/a6afc2ce/hermes-hub/hub/hubtest"
)

func put(t *testing.T, dir, rel, content string) {
	t.Helper()
	p := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	// Made whole beside it and renamed in: written in place, the file is
	// changed twice (emptied, then written), and a watch may tell of each.
	tmp := filepath.Join(filepath.Dir(p), "."+filepath.Base(p)+".tmp")
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, p); err != nil {
		t.Fatal(err)
	}
}

// rpcCode is the JSON-RPC error code of err, or 0.
func rpcCode(err error) int64 {
	var je *jsonrpc.Error
	if errors.As(err, &je) {
		return je.Code
	}
	return 0
}

// mirrored is everything the hub mirrored of its calls so far.
func mirrored(t *testing.T, env *hubtest.Env) string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(env.Config.StateDir, "flows", "*", "chat", "*.jsonl"))
	var all strings.Builder
	for _, f := range files {
		b, _ := os.ReadFile(f)
		all.Write(b)
	}
	return all.String()
}

// TestResources lists the workspace's files as resources in pages, with
// fs.find's ignore rules, reads text and binary ones, refuses what
// fs.readFile refuses, and mirrors each as the verb's turn.
func TestResources(t *testing.T) {
	env, cs := stdioEnv(t, "agent:local")
	ws := env.Config.Workspace
	for i := range 150 {
		put(t, ws, fmt.Sprintf("many/f%03d.txt", i), "x")
	}
	put(t, ws, "README.md", "# hello\n")
	put(t, ws, "bin/blob.dat", "\x00\x01\x02binary")
	put(t, ws, ".gitignore", "ignored/\n")
	put(t, ws, "ignored/secret.txt", "not listed")
	ctx := context.Background()

	var all []*mcp.Resource
	pages := 0
	for r, err := range cs.Resources(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, r)
	}
	first, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for p := first; ; pages++ {
		if p.NextCursor == "" {
			pages++
			break
		}
		if p, err = cs.ListResources(ctx, &mcp.ListResourcesParams{Cursor: p.NextCursor}); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	for _, r := range all {
		names = append(names, r.Name)
		if r.URI != mcpsurface.ResourceURI(r.Name) {
			t.Errorf("resource %s has URI %s", r.Name, r.URI)
		}
	}
	if len(all) != 152 || pages != 2 || !slices.IsSorted(names) || !slices.Contains(names, "README.md") || !slices.Contains(names, "bin/blob.dat") {
		t.Fatalf("%d resources in %d pages: %v", len(all), pages, names)
	}
	for _, n := range names {
		if strings.HasPrefix(n, "ignored/") || strings.HasPrefix(n, ".") {
			t.Errorf("listed %s, which the ignore rules (or being hidden) leave out", n)
		}
	}
	if _, err := cs.ListResources(ctx, &mcp.ListResourcesParams{Cursor: "!!"}); rpcCode(err) != jsonrpc.CodeInvalidParams {
		t.Errorf("a bad cursor: %v", err)
	}

	tpl, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil || len(tpl.ResourceTemplates) != 1 || tpl.ResourceTemplates[0].URITemplate != mcpsurface.PathTemplate {
		t.Fatalf("templates: %+v %v", tpl, err)
	}

	text, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "hub:///README.md"})
	if err != nil || len(text.Contents) != 1 || text.Contents[0].Text != "# hello\n" || text.Contents[0].MIMEType != "text/markdown; charset=utf-8" {
		t.Fatalf("read text: %+v %v", text, err)
	}
	blob, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "hub:///bin/blob.dat"})
	if err != nil || string(blob.Contents[0].Blob) != "\x00\x01\x02binary" || blob.Contents[0].Text != "" || blob.Contents[0].MIMEType != "application/octet-stream" {
		t.Fatalf("read binary: %+v %v", blob, err)
	}
	// A listed URI reads back.
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: all[0].URI}); err != nil {
		t.Errorf("read %s: %v", all[0].URI, err)
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "hub:///no/such.txt"}); rpcCode(err) != jsonrpc.CodeInvalidParams || !strings.Contains(err.Error(), "Resource not found") {
		t.Errorf("a missing file: %v", err)
	}
	for _, uri := range []string{"hub:///../etc/passwd", "hub:///.hub/hub.db", "hub:///a/../../x"} {
		if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri}); rpcCode(err) != jsonrpc.CodeInvalidParams || !strings.Contains(err.Error(), "forbidden_path") {
			t.Errorf("%s: %v, want forbidden_path", uri, err)
		}
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "file:///etc/passwd"}); err == nil {
		t.Error("a URI of another scheme was read")
	}

	m := mirrored(t, env)
	for _, want := range []string{`"verb":"fs.find"`, `\"path\":\"README.md\"`, `"actor":"agent:local"`} {
		if !strings.Contains(m, want) && !strings.Contains(m, strings.ReplaceAll(want, `\"`, `"`)) {
			t.Errorf("the mirror lacks %s:\n%.1500s", want, m)
		}
	}
}

// TestResourcesRoleChecked: an identity without fs.readFile or fs.find
// reads and lists nothing; the reader role does.
func TestResourcesRoleChecked(t *testing.T) {
	env, none := stdioEnv(t, "agent:nobody")
	put(t, env.Config.Workspace, "a.txt", "a")
	ctx := context.Background()
	if _, err := none.ReadResource(ctx, &mcp.ReadResourceParams{URI: "hub:///a.txt"}); err == nil || !strings.Contains(err.Error(), "forbidden") {
		t.Errorf("read without a grant: %v", err)
	}
	if _, err := none.ListResources(ctx, nil); err == nil || !strings.Contains(err.Error(), "forbidden") {
		t.Errorf("list without a grant: %v", err)
	}
	if _, err := none.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: mcpsurface.PathTemplate}, Argument: mcp.CompleteParamsArgument{Name: "path", Value: "a"}}); err == nil || !strings.Contains(err.Error(), "forbidden") {
		t.Errorf("complete without a grant: %v", err)
	}
	legacy := serveStdioVersion(t, mcpsurface.Options{Intake: env.Runtime.Hub, Identity: "agent:nobody"}, nil, legacyVersion)
	if err := legacy.Subscribe(ctx, &mcp.SubscribeParams{URI: "hub:///a.txt"}); err == nil || !strings.Contains(err.Error(), "forbidden") {
		t.Errorf("subscribe without a grant: %v", err)
	}
	reader := serveStdio(t, mcpsurface.Options{Intake: env.Runtime.Hub, Identity: "agent:reader"}, nil)
	if r, err := reader.ReadResource(ctx, &mcp.ReadResourceParams{URI: "hub:///a.txt"}); err != nil || r.Contents[0].Text != "a" {
		t.Errorf("the reader role reads: %+v %v", r, err)
	}
}

// TestCompletions completes the template's path to the names under the
// typed prefix, directories with a slash; a prompt or another template is
// refused.
func TestCompletions(t *testing.T) {
	env, cs := stdioEnv(t, "agent:local")
	ws := env.Config.Workspace
	put(t, ws, "docs/mcp.md", "")
	put(t, ws, "docs/state.md", "")
	put(t, ws, "doc.go", "")
	put(t, ws, "main.go", "")
	ctx := context.Background()
	complete := func(v string) ([]string, error) {
		r, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: mcpsurface.PathTemplate}, Argument: mcp.CompleteParamsArgument{Name: "path", Value: v}})
		if err != nil {
			return nil, err
		}
		return r.Completion.Values, nil
	}
	for typed, want := range map[string]string{
		"do":        "[docs/ doc.go]",
		"docs/":     "[docs/mcp.md docs/state.md]",
		"docs/s":    "[docs/state.md]",
		"nothere/x": "[]",
		"zz":        "[]",
	} {
		got, err := complete(typed)
		if err != nil || fmt.Sprint(got) != want {
			t.Errorf("complete %q: %v %v, want %s", typed, got, err, want)
		}
	}
	if _, err := complete("../"); err == nil || !strings.Contains(err.Error(), "forbidden_path") {
		t.Errorf("complete ../: %v", err)
	}
	if _, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "x"}, Argument: mcp.CompleteParamsArgument{Name: "a", Value: "b"}}); rpcCode(err) != jsonrpc.CodeInvalidParams || !strings.Contains(err.Error(), "no prompt \"x\"") {
		t.Errorf("a prompt: %v", err)
	}
	if _, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: "hub:///{x}"}, Argument: mcp.CompleteParamsArgument{Name: "x", Value: "b"}}); rpcCode(err) != jsonrpc.CodeInvalidParams {
		t.Errorf("another template: %v", err)
	}
}

// legacyVersion is the protocol version of clients that subscribe with
// resources/subscribe (the newest one, 2026-07-28, subscribes with
// subscriptions/listen).
const legacyVersion = "2025-11-25"

// TestSubscribe hears a change of a subscribed file, made outside the
// hub, and of one that did not exist when subscribed to; after
// unsubscribing, nothing more: with resources/subscribe and with
// subscriptions/listen.
func TestSubscribe(t *testing.T) {
	for _, version := range []string{legacyVersion, ""} {
		t.Run("version="+version, func(t *testing.T) { testSubscribe(t, version) })
	}
}

func testSubscribe(t *testing.T, version string) {
	updated := make(chan string, 16)
	env, _ := stdioEnv(t, "agent:local")
	cs := serveStdioVersion(t, mcpsurface.Options{Intake: env.Runtime.Hub, Identity: "agent:local"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) { updated <- r.Params.URI },
	}, version)
	ws := env.Config.Workspace
	put(t, ws, "watched.txt", "one")
	ctx := context.Background()
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "hub:///watched.txt"}); err != nil {
		t.Fatal(err)
	}
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "hub:///later/new.txt"}); err != nil {
		t.Fatal(err)
	}
	// subscriptions/listen is answered before the hub has subscribed (the
	// client does not wait for it): the subscriptions are in place once
	// their watches' first fs.watch turns are mirrored.
	for strings.Count(mirrored(t, env), `timeoutSeconds\":600`) < 2 {
		time.Sleep(10 * time.Millisecond)
	}
	put(t, ws, "watched.txt", "two, longer")
	if got := <-updated; got != "hub:///watched.txt" {
		t.Fatalf("updated %s", got)
	}
	put(t, ws, "later/new.txt", "new")
	if got := <-updated; got != "hub:///later/new.txt" {
		t.Fatalf("updated %s", got)
	}
	if err := cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "hub:///watched.txt"}); err != nil {
		t.Fatal(err)
	}
	if version == legacyVersion {
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "hub:///../x"}); err == nil || !strings.Contains(err.Error(), "forbidden_path") {
			t.Errorf("subscribe outside the workspace: %v", err)
		}
	}
	put(t, ws, "watched.txt", "three, after unsubscribing")
	put(t, ws, "later/new.txt", "changed again")
	if got := <-updated; got != "hub:///later/new.txt" {
		t.Fatalf("updated %s after unsubscribing from watched.txt", got)
	}
}
