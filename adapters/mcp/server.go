package mcp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Intake is the hub as the MCP surface uses it; *hub.Hub satisfies it.
type Intake interface {
	// Execute runs a call (here the verb and arguments of a tools/call,
	// decoded by this surface): access checked, mirrored. An error means it
	// was refused unrun (its audit record could not be written).
	Execute(ctx context.Context, req hub.APIRequest) (*executor.Outcome, error)
	// VerbsFor lists the verbs the identities may run.
	VerbsFor(ids []string) []executor.Info
	// Registry describes every verb.
	Registry() *executor.Registry
}

// StatusReporter receives the surface's state for the status page.
type StatusReporter interface {
	Report(state hub.State, detail string)
}

// DefaultProgressInterval is how often a call with a progress token hears
// how long it has run and the last lines of its output.
const DefaultProgressInterval = time.Second

// requestIDMeta is the _meta key under which the transports hand a
// tools/call's JSON-RPC id to the tool handler (the SDK does not expose it).
// A client's own value under this key is overwritten.
const requestIDMeta = "hermes-hub/requestId"

// Options configure a Server.
type Options struct {
	// Intake is the hub; required.
	Intake Intake
	// Identity is the caller of calls that carry no token (stdio);
	// default "agent:local".
	Identity string
	// Version is reported to clients as the server's version.
	Version string
	// ProgressInterval paces progress notifications; default 1 s.
	ProgressInterval time.Duration
	// MaxLineBytes bounds one message over stdio; default
	// DefaultMaxLineBytes.
	MaxLineBytes int
	// MaxPending bounds the stdio messages in progress; default
	// DefaultMaxPending.
	MaxPending int
	Status     StatusReporter
	Clock      clock.Clock
	Logger     *slog.Logger
}

// DefaultIdentity is the identity of stdio callers when Options names none.
const DefaultIdentity = "agent:local"

// Server is the MCP surface: one SDK server whose tools are the verbs,
// served over stdio (RunStdio) and streamable HTTP (Handler).
type Server struct {
	opts  Options
	srv   *mcp.Server
	log   *slog.Logger
	stdio atomic.Value // string: the session id of the stdio connection
	seq   atomic.Uint64

	toolsMu     sync.Mutex
	tools       map[string]bool                          // the tool names added, for syncTools
	direct      atomic.Pointer[map[string]executor.Info] // the tools by name, for the direct path (fastcall.go)
	directCalls atomic.Uint64                            // the calls the direct path has answered
	prompts     map[string]promptArgs                    // the prompts added (named commands), prompts.go

	// watches are the subscribed resources (subscriptions.go).
	watches watches
}

// New builds the server with one tool per registered verb.
func New(opts Options) (*Server, error) {
	if opts.Intake == nil {
		return nil, errors.New("mcp: Options.Intake is required")
	}
	if opts.Identity == "" {
		opts.Identity = DefaultIdentity
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.ProgressInterval <= 0 {
		opts.ProgressInterval = DefaultProgressInterval
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	s := &Server{opts: opts, log: opts.Logger.With("adapter", "mcp")}
	s.watches.base, s.watches.end = context.WithCancel(context.Background())
	s.stdio.Store("")
	s.srv = mcp.NewServer(&mcp.Implementation{Name: "hermes-hub", Title: "Hermes Hub", Version: opts.Version}, &mcp.ServerOptions{
		Instructions:       "The tools are the verbs of a Hermes Hub: files in a confined workspace (fs_*), programs (proc_run), the machine (sys_machineInfo) and session workspaces (vfs_*). Paths are relative to the workspace. The workspace's files are also resources, hub:///<path>.",
		CompletionHandler:  s.complete,
		SubscribeHandler:   s.subscribe,
		UnsubscribeHandler: s.unsubscribe,
	})
	reg := opts.Intake.Registry()
	if err := s.syncTools(); err != nil {
		return nil, err
	}
	// The server lives as long as the hub's registry: it follows its
	// changes (a reload's named commands) to the end.
	reg.Watch(func() {
		if err := s.syncTools(); err != nil {
			s.log.Error("tools not updated after a change of the named commands", "err", err)
		}
	})
	s.addResources()
	s.srv.AddReceivingMiddleware(s.withCaller, s.filterTools, s.resourceList)
	return s, nil
}

// syncTools makes the server's tools the registry's verbs: each added
// (replacing one of the same name: a named command changed by a reload)
// and those no longer registered removed. The SDK tells the clients the
// list changed.
func (s *Server) syncTools() error {
	s.toolsMu.Lock()
	defer s.toolsMu.Unlock()
	reg := s.opts.Intake.Registry()
	now := map[string]bool{}
	direct := map[string]executor.Info{}
	for _, info := range reg.Verbs() {
		if info.ChatOnly {
			// It needs a chat conversation: a file sent with the message,
			// or files sent back (docs/uploads.md).
			continue
		}
		tool, err := toolOf(reg, info)
		if err != nil {
			return err
		}
		s.srv.AddTool(tool, s.handler(info))
		now[tool.Name] = true
		direct[tool.Name] = info
	}
	var gone []string
	for name := range s.tools {
		if !now[name] {
			gone = append(gone, name)
		}
	}
	if len(gone) > 0 {
		s.srv.RemoveTools(gone...)
	}
	s.tools = now
	s.direct.Store(&direct)
	s.syncPrompts(reg)
	return nil
}

// ToolName is the MCP name of a verb: '.' becomes '_' (fs.readFile is
// fs_readFile), since many clients refuse dots in tool names. The registry
// reads '_' as '.', so the name maps back.
func ToolName(verb string) string { return strings.ReplaceAll(verb, ".", "_") }

func toolOf(reg *executor.Registry, info executor.Info) (*mcp.Tool, error) {
	in, out, ok := reg.JSONSchemas(info.Name)
	if !ok {
		return nil, fmt.Errorf("mcp: no schema for verb %s", info.Name)
	}
	return &mcp.Tool{
		Name:         ToolName(info.Name),
		Title:        info.Name,
		Description:  info.Summary + " (hub verb " + info.Name + ")",
		InputSchema:  in,
		OutputSchema: out,
		Annotations:  annotations(info),
	}, nil
}

// identity is the caller of a request: the token's identity over HTTP, the
// configured one over stdio.
func (s *Server) identity(extra *mcp.RequestExtra) string {
	if extra != nil && extra.TokenInfo != nil && extra.TokenInfo.UserID != "" {
		return extra.TokenInfo.UserID
	}
	return s.opts.Identity
}

// filterTools keeps, in a tools/list answer, the tools the caller may run,
// and in a prompts/list answer the prompts of the named commands it may run.
// A hidden tool can still be called; the hub then refuses it as forbidden,
// with the grant that would allow it.
func (s *Server) filterTools(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if (method != "tools/list" && method != "prompts/list") || err != nil {
			return res, err
		}
		allowed := map[string]bool{}
		for _, info := range s.opts.Intake.VerbsFor([]string{s.identity(req.GetExtra())}) {
			allowed[ToolName(info.Name)] = true
		}
		switch l := res.(type) {
		case *mcp.ListToolsResult:
			l.Tools = slices.DeleteFunc(slices.Clone(l.Tools), func(t *mcp.Tool) bool { return !allowed[t.Name] })
		case *mcp.ListPromptsResult:
			// A prompt is the named command cmd.<name>: shown to whom may run it.
			l.Prompts = slices.DeleteFunc(slices.Clone(l.Prompts), func(p *mcp.Prompt) bool { return !allowed[ToolName(commandPrefix+p.Name)] })
		}
		return res, nil
	}
}

// resourceList answers resources/list itself: the SDK lists only fixed
// resources, the hub's are the workspace's files (listResources).
func (s *Server) resourceList(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if lr, ok := req.(*mcp.ListResourcesRequest); ok && method == "resources/list" {
			return s.listResources(ctx, lr)
		}
		return next(ctx, method, req)
	}
}

// handler runs one verb as a turn (execute), with progress notifications
// when the call asks for them and the confirmation asked by elicitation.
// A call the hub could not record is a JSON-RPC internal error.
func (s *Server) handler(info executor.Info) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		reqID := ""
		if id, ok := req.Params.GetMeta()[requestIDMeta]; ok && id != nil {
			reqID = fmt.Sprint(id)
		}
		turn := s.turnID(req.Session, reqID)
		if tok := req.Params.GetProgressToken(); tok != nil && req.Session != nil {
			var stop func()
			ctx, stop = s.progress(ctx, req.Session, tok, info.Name, turn)
			defer stop()
		}
		asked, yes, why := confirmed(req.Params.InputResponses)
		if asked && !yes {
			return resultOf(&executor.Outcome{Verb: info.Name, Err: executor.Errorf(executor.CodeCanceled, "%s was not run: the confirmation was %s.", info.Name, why)}), nil
		}
		out, err := s.execute(ctx, s.identity(req.Extra), turn, info, req.Params.Arguments, asked)
		if err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
		}
		if !asked && out.Err != nil && out.Err.Code == executor.CodeConfirmationRequired && canElicit(req.Session) {
			return askToConfirm(out, info, req.Params.Arguments), nil
		}
		return resultOf(out), nil
	}
}

// execute runs a tool's verb as a turn of identity. The hub gets the verb
// as registered and the arguments as sent (none is an empty object): it
// decodes no envelope and looks the verb up no more. confirmed says the
// caller's user confirmed this exact call.
func (s *Server) execute(ctx context.Context, identity, turn string, info executor.Info, args json.RawMessage, confirmed bool) (*executor.Outcome, error) {
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	return s.opts.Intake.Execute(ctx, hub.APIRequest{Identity: identity, TurnID: turn, Verb: info, Arguments: args, Confirmed: confirmed})
}

// resultOf is a verb's outcome as a tool result: the result JSON as
// structured content, the chat rendering as text; a failed verb is a tool
// error (isError) with the hub's errorCode in the structured content.
func resultOf(out *executor.Outcome) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: executor.RenderText(out, false)}},
		StructuredContent: json.RawMessage(out.JSON()),
		IsError:           !out.Succeeded(),
	}
}

// badIDRune reports a character idPart replaces.
func badIDRune(r rune) bool {
	return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_-+=@", r))
}

// TurnID is the turn id of a tools/call: mcp.<session>.<request>, each part
// reduced to the characters turn ids and proc.run's output directories
// accept (letters, digits and . _ - + = @, no "..", no ':'). A part that
// had to change gets a short hash of its original, so distinct ids stay
// distinct.
func TurnID(session, request string) string {
	if session == "" {
		session = "none"
	}
	return "mcp." + idPart(session) + "." + idPart(request)
}

func idPart(s string) string {
	const maxLen = 64
	if s != "" && len(s) <= maxLen && strings.IndexFunc(s, badIDRune) < 0 {
		return s // the usual case: nothing to change
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("_-+=@", c) >= 0 {
			b.WriteByte(c)
		} else {
			b.WriteByte('_')
		}
	}
	out := b.String()
	if out == s && len(out) <= maxLen && out != "" {
		return out
	}
	sum := sha256.Sum256([]byte(s))
	if len(out) > maxLen {
		out = out[:maxLen]
	}
	return out + "-" + hex.EncodeToString(sum[:4])
}
