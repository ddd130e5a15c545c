package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/a6afc2ce/hermes-hub/admin"
	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/executor"
)

const execUsage = `hub exec [ENVELOPE] [-i FILE] [-o FILE] [--workspace NAME|DIR] [--interactive | --stdio]

Runs verb envelopes ({verb, arguments} in YAML or JSON) against the workspace.
--workspace NAME runs them in the configured workspace NAME (see hub
workspaces list; an envelope may also carry "workspace": NAME); a value that
names no configured workspace, or has a path separator (./NAME), or is . or
.., is a directory, used as the default workspace. A configured name that is
also a directory here is refused: write ./NAME for the directory.
  hub exec '{"verb":"fs.listDir","arguments":{"path":"."}}'
  echo 'verb: fs.readRange
  arguments: {path: README.md, startLine: 1, endLine: 5}' | hub exec
  hub exec --interactive     envelopes end at a blank line; "exit" quits
  hub exec --stdio           one JSON envelope per line in, one JSON result per line out, "id" echoed
Exit status: 0 when the verb succeeded, 1 when it failed, 2 for usage errors.
Calls that may change something (and, with mirror.cli: all, every call) are
mirrored as kind "cli" with the local user (see docs/state.md).`

func runExec(env *cliEnv, args []string) error {
	f := newFlags(env, "exec", execUsage)
	var c commonFlags
	c.register(f, true)
	in := f.String("i", "", "read the envelope from FILE (- for stdin)")
	out := f.String("o", "", "write the result to FILE instead of stdout")
	interactive := f.Bool("interactive", false, "read envelopes separated by blank lines, with a prompt on stderr")
	stdio := f.Bool("stdio", false, "serve one JSON envelope per line on stdin, one result per line on stdout")
	pretty := f.Bool("pretty", false, "indent the result JSON")
	deliver := f.Bool("deliver", false, "also deliver the rendered result to every delivery target (see hub targets)")
	pos, err := f.parse(args)
	if err != nil {
		return err
	}
	modes := 0
	for _, on := range []bool{*interactive, *stdio, *in != "", len(pos) > 0} {
		if on {
			modes++
		}
	}
	if modes > 1 {
		return usagef("give one of ENVELOPE, -i FILE, --interactive or --stdio")
	}
	if *deliver && (*interactive || *stdio) {
		return usagef("--deliver works with one envelope, not with --interactive or --stdio")
	}
	if len(pos) > 1 {
		return usagef("one ENVELOPE argument expected, got %d (quote the envelope)", len(pos))
	}
	cfg, name, err := loadExecConfig(c)
	if err != nil {
		return err
	}
	tc, err := buildExecutor(cfg, nil)
	if err != nil {
		return err
	}
	defer tc.Close()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	mir := newCLIMirror(cfg)
	defer mir.Close()
	ids := newTurnIDs("cli")
	run := func(ctx context.Context, input []byte) *executor.Outcome {
		return runCLI(ctx, tc.exec, mir, ids, input, name, env.stderr)
	}

	w := env.stdout
	if *out != "" {
		fh, err := os.OpenFile(*out, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			return fmt.Errorf("open output: %w", err)
		}
		defer fh.Close()
		w = fh
	}
	switch {
	case *stdio:
		return serveStdio(ctx, run, env.stdin, w)
	case *interactive:
		return interact(ctx, run, env.stdin, w, env.stderr, *pretty)
	}
	var input []byte
	switch {
	case len(pos) == 1:
		input = []byte(pos[0])
	case *in != "" && *in != "-":
		input, err = os.ReadFile(*in)
		if err != nil {
			return fmt.Errorf("read envelope: %w", err)
		}
	default:
		input, err = io.ReadAll(io.LimitReader(env.stdin, int64(executor.DefaultLimits.MaxInputBytes)+1))
		if err != nil {
			return fmt.Errorf("read envelope from stdin: %w", err)
		}
	}
	o := run(ctx, input)
	if err := writeResult(w, o.JSON(), *pretty); err != nil {
		return err
	}
	if *deliver {
		if err := deliverOutcome(ctx, cfg, mir, o, env); err != nil {
			return err
		}
	}
	if !o.Succeeded() {
		return &exitError{code: exitFailed}
	}
	return nil
}

// loadExecConfig loads the configuration for hub exec. --workspace is
// either a configured workspace (returned) or the directory of the default
// workspace, as before workspaces had names, and never ambiguous: a value
// with a path separator, or "." or "..", is a directory; a configured name
// that is also a directory here (other than that workspace's own) is
// refused, saying how to name either.
func loadExecConfig(c commonFlags) (*config.Config, string, error) {
	dir := c.workspace
	c.workspace = ""
	cfg, err := loadConfig(c)
	if err != nil {
		return nil, "", err
	}
	if dir == "" {
		return cfg, "", nil
	}
	if strings.ContainsRune(dir, filepath.Separator) || strings.ContainsRune(dir, '/') || dir == "." || dir == ".." {
		cfg.Workspace = dir
		return cfg, "", nil
	}
	wc, ok := cfg.WorkspaceByName(dir)
	if !ok || config.ValidWorkspaceName(dir) != nil {
		cfg.Workspace = dir
		return cfg, "", nil
	}
	if here, err := os.Stat(dir); err == nil && here.IsDir() {
		if own, err := os.Stat(wc.Path); err != nil || !os.SameFile(here, own) {
			return nil, "", usagef("--workspace %s is ambiguous: it names the configured workspace %s and the directory ./%s here; say --workspace ./%s for the directory, or run from elsewhere for the workspace", dir, dir, dir, dir)
		}
	}
	return cfg, dir, nil
}

// runCLI decodes and runs one envelope given to the CLI. A call that may
// change something is mirrored first (and not run when that fails), its
// result after; notes go to stderr.
func runCLI(ctx context.Context, x *executor.Executor, mir *cliMirror, ids *turnIDs, input []byte, workspace string, stderr io.Writer) *executor.Outcome {
	envelope, err := x.DecodeEnvelope(input)
	if err != nil {
		return &executor.Outcome{Err: executor.ErrorFrom(err), ID: envelope.ID}
	}
	switch {
	case envelope.Workspace != "" && workspace != "" && envelope.Workspace != workspace:
		return &executor.Outcome{Err: executor.Errorf(executor.CodeInvalidEnvelope, "The envelope names workspace %q and --workspace %q; name one", envelope.Workspace, workspace), ID: envelope.ID}
	case workspace == "":
		workspace = envelope.Workspace
	}
	turnID := ids.next(clock.Real{}.Now())
	// The operator's own command: every configured workspace is open to it.
	ctx = executor.WithCall(ctx, executor.Call{TurnID: turnID, Identity: "cli", Workspace: workspace})
	cc, err := mir.call(ctx, x.Registry(), envelope, turnID)
	if err != nil {
		return &executor.Outcome{Err: executor.Errorf(executor.CodeIOError, "%s was not run: %v", envelope.Verb, err), ID: envelope.ID}
	}
	o := x.Run(ctx, envelope)
	if cc.mirrored {
		if err := mir.result(ctx, cc, o, envelope.Verb, turnID); err != nil {
			fmt.Fprintf(stderr, "warning: %v\n", err)
		}
	}
	for _, n := range o.Notes {
		fmt.Fprintf(stderr, "note: %s\n", n)
	}
	return o
}

func writeResult(w io.Writer, res []byte, pretty bool) error {
	if pretty {
		var b bytes.Buffer
		if json.Indent(&b, res, "", "  ") == nil {
			res = b.Bytes()
		}
	}
	_, err := fmt.Fprintf(w, "%s\n", res)
	return err
}

// interact reads envelopes separated by blank lines. The prompt goes to
// stderr so stdout carries only results. "exit" on its own quits; an
// envelope still pending at the end of input is executed, not dropped.
func interact(ctx context.Context, run func(context.Context, []byte) *executor.Outcome, r io.Reader, w, prompt io.Writer, pretty bool) error {
	br := bufio.NewReader(r)
	var buf strings.Builder
	failed := false
	showPrompt := func() {
		if buf.Len() == 0 {
			fmt.Fprint(prompt, "hub> ")
		} else {
			fmt.Fprint(prompt, "...> ")
		}
	}
	flush := func() error {
		text := buf.String()
		buf.Reset()
		if strings.TrimSpace(text) == "" {
			return nil
		}
		o := run(ctx, []byte(text))
		if !o.Succeeded() {
			failed = true
		}
		return writeResult(w, o.JSON(), pretty)
	}
	fmt.Fprintln(prompt, "Enter a verb envelope in YAML or JSON; a blank line runs it, \"exit\" quits.")
	for {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		showPrompt()
		line, err := br.ReadString('\n')
		if len(line) > 0 || err == nil {
			t := strings.TrimRight(line, "\r\n")
			switch {
			case strings.TrimSpace(t) == "exit" && buf.Len() == 0:
				return nil
			case strings.TrimSpace(t) == "":
				if err := flush(); err != nil {
					return err
				}
			default:
				buf.WriteString(t)
				buf.WriteByte('\n')
				if buf.Len() > executor.DefaultLimits.MaxInputBytes {
					buf.Reset()
					o := executor.Outcome{Err: executor.Errorf(executor.CodeTooLarge, "Envelope is over the %d-byte limit; it was discarded", executor.DefaultLimits.MaxInputBytes)}
					failed = true
					if err := writeResult(w, o.JSON(), pretty); err != nil {
						return err
					}
				}
			}
		}
		if err != nil {
			fmt.Fprintln(prompt)
			if ferr := flush(); ferr != nil {
				return ferr
			}
			if !errors.Is(err, io.EOF) {
				return fmt.Errorf("read input: %w", err)
			}
			if failed {
				return &exitError{code: exitFailed}
			}
			return nil
		}
	}
}

// deliverOutcome renders the result as in chat and fans it out to the
// delivery targets, through the running hub or the state directory.
func deliverOutcome(ctx context.Context, cfg *config.Config, mir *cliMirror, o *executor.Outcome, env *cliEnv) error {
	text := executor.RenderText(o, false)
	c, err := openAdmin(cfg)
	if err != nil {
		return fmt.Errorf("deliver: %w", err)
	}
	defer c.Close()
	res, err := mir.deliver(ctx, "exec --deliver", text, "", func() (admin.DeliverResult, error) {
		var res admin.DeliverResult
		err := c.do("POST", "/api/deliver", nil, admin.DeliverRequest{Text: text}, &res)
		return res, err
	})
	if err != nil {
		return fmt.Errorf("deliver: %w", err)
	}
	fmt.Fprintf(env.stderr, "delivered as turn %s: %d %s enqueued\n", res.TurnID, len(res.Outbox), plural(len(res.Outbox), "chunk", "chunks"))
	if res.Note != "" {
		fmt.Fprintln(env.stderr, res.Note)
	}
	return nil
}
