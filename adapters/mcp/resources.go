package mcp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/url"
	"path"
	"strings"

	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The workspace's files as MCP resources (docs/mcp.md). Every operation is
// a turn of a verb through the hub's Execute, so it is role-checked,
// confined and mirrored as that verb's tools/call would be:
//
//   - resources/list is an fs.find turn (files, the ignore rules of
//     fs.find), answered in pages of ResourcePageSize;
//   - resources/read is an fs.readFile turn: text, or a blob for binary
//     content;
//   - completion/complete of the template's path is an fs.listDir turn;
//   - resources/subscribe is an fs.stat turn, and its updates come from
//     fs.watch turns (subscriptions.go).

// ResourceScheme is the scheme of the workspace's resource URIs:
// hub:///<workspace-relative path>.
const ResourceScheme = "hub"

// PathTemplate is the resource template of every workspace path.
const PathTemplate = "hub:///{+path}"

// ResourcePageSize is how many resources one resources/list page holds.
const ResourcePageSize = 100

// maxListed is the most files resources/list walks to (fs.find's bound).
const maxListed = 2000

// ResourceURI is the URI of a workspace-relative path.
func ResourceURI(p string) string {
	return (&url.URL{Scheme: ResourceScheme, Path: "/" + strings.TrimPrefix(p, "/")}).String()
}

// pathOf is the workspace-relative path of a resource URI, or an error
// saying what a resource URI is.
func pathOf(uri string) (string, error) {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != ResourceScheme || u.Host != "" || u.Opaque != "" || u.RawQuery != "" || u.Fragment != "" || len(u.Path) < 2 {
		return "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("%q is not a resource of this hub: its resources are hub:///<workspace-relative path>, like hub:///README.md", uri)}
	}
	return u.Path[1:], nil
}

// addResources registers the path template; resources/list is answered by
// listResources (the SDK lists only fixed resources).
func (s *Server) addResources() {
	s.srv.AddResourceTemplate(&mcp.ResourceTemplate{
		Name:        "workspace file",
		Title:       "A file of the workspace",
		Description: "A file of the workspace, by its workspace-relative path, read as fs_readFile reads it: text, or a blob for binary content",
		URITemplate: PathTemplate,
	}, s.readResource)
}

// verbInfo is the registry's description of a verb the hub registers.
func (s *Server) verbInfo(name string) (executor.Info, error) {
	for _, info := range s.opts.Intake.Registry().Verbs() {
		if info.Name == name {
			return info, nil
		}
	}
	return executor.Info{}, fmt.Errorf("mcp: the hub has no verb %s", name)
}

// turn runs verb with args as a turn of the caller of a request that is
// not a tools/call, and decodes its result into res. A failed verb is
// returned as its *executor.Error.
func (s *Server) turn(ctx context.Context, ss *mcp.ServerSession, extra *mcp.RequestExtra, verb string, args, res any) error {
	return s.turnAs(ctx, ss, s.caller(ctx, extra), verb, args, res)
}

// callerKey carries the caller's identity from the receiving middleware to
// handlers the SDK calls without the request's extra (a subscription of
// subscriptions/listen).
type callerKey struct{}

// withCaller puts the caller of every request in its context.
func (s *Server) withCaller(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		return next(context.WithValue(ctx, callerKey{}, s.identity(req.GetExtra())), method, req)
	}
}

// caller is the identity of the request whose handler runs in ctx.
func (s *Server) caller(ctx context.Context, extra *mcp.RequestExtra) string {
	if extra != nil && extra.TokenInfo != nil {
		return s.identity(extra)
	}
	if id, ok := ctx.Value(callerKey{}).(string); ok && id != "" {
		return id
	}
	return s.identity(extra)
}

func (s *Server) turnAs(ctx context.Context, ss *mcp.ServerSession, identity, verb string, args, res any) error {
	info, err := s.verbInfo(verb)
	if err != nil {
		return err
	}
	aj, err := json.Marshal(args)
	if err != nil {
		return fmt.Errorf("mcp: encode the arguments of %s: %w", verb, err)
	}
	out, err := s.opts.Intake.Execute(ctx, hub.APIRequest{Identity: identity, TurnID: s.turnID(ss, ""), Verb: info, Arguments: aj})
	if err != nil {
		return err
	}
	if !out.Succeeded() {
		return out.Err
	}
	return json.Unmarshal(out.JSON(), res)
}

// turnID is the turn id of a call of session ss: request, or a number of
// the server's own when the request has no id the handler can see.
func (s *Server) turnID(ss *mcp.ServerSession, request string) string {
	session := ""
	if ss != nil {
		session = ss.ID()
	}
	if session == "" {
		session, _ = s.stdio.Load().(string)
	}
	if request == "" {
		request = fmt.Sprintf("n%d", s.seq.Add(1))
	}
	return TurnID(session, request)
}

// protocolError is a failed verb as the JSON-RPC error of a resources or
// completion request: not_found is the resource-not-found error, the
// others invalid params with the hub's message.
func protocolError(err error, uri string) error {
	var xe *executor.Error
	if !errors.As(err, &xe) {
		return err
	}
	if xe.Code == executor.CodeNotFound && uri != "" {
		return mcp.ResourceNotFoundError(uri)
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("%s (%s)", xe.Message, xe.Code)}
}

// readFileResult is the part of fs.readFile's result a read uses.
type readFileResult struct {
	Content string `json:"content"`
	File    struct {
		Encoding string `json:"encoding"`
	} `json:"file"`
}

// readResource answers resources/read of hub:///<path> with an fs.readFile
// turn.
func (s *Server) readResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	p, err := pathOf(uri)
	if err != nil {
		return nil, err
	}
	var rf readFileResult
	if err := s.turn(ctx, req.Session, req.Extra, "fs.readFile", map[string]string{"path": p}, &rf); err != nil {
		return nil, protocolError(err, uri)
	}
	c := &mcp.ResourceContents{URI: uri, MIMEType: mimeOf(p, rf.File.Encoding == "base64")}
	if rf.File.Encoding == "base64" {
		if c.Blob, err = base64.StdEncoding.DecodeString(rf.Content); err != nil {
			return nil, fmt.Errorf("mcp: fs.readFile's base64 content of %s: %w", p, err)
		}
	} else {
		c.Text = rf.Content
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{c}}, nil
}

// mimeOf is the MIME type of a file by its name's extension: text/plain
// for text and application/octet-stream for binary content it names no
// other type for.
func mimeOf(p string, binary bool) string {
	if t := mime.TypeByExtension(path.Ext(p)); t != "" {
		return t
	}
	if binary {
		return "application/octet-stream"
	}
	return "text/plain"
}

// findResult is the part of fs.find's result a listing uses.
type findResult struct {
	Entries []struct {
		Path      string `json:"path"`
		SizeBytes int64  `json:"sizeBytes"`
	} `json:"entries"`
	Truncated bool `json:"truncated"`
}

// listResources answers resources/list: an fs.find turn of every file
// (the ignore rules of fs.find, at most maxListed), in path order, a page
// of ResourcePageSize after the cursor (the last path of the page before).
func (s *Server) listResources(ctx context.Context, req *mcp.ListResourcesRequest) (*mcp.ListResourcesResult, error) {
	after := ""
	if req.Params != nil && req.Params.Cursor != "" {
		b, err := base64.RawURLEncoding.DecodeString(req.Params.Cursor)
		if err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid cursor: pass the nextCursor of the page before, unchanged"}
		}
		after = string(b)
	}
	var found findResult
	max := maxListed
	if err := s.turn(ctx, req.Session, req.Extra, "fs.find", map[string]any{"pattern": "**", "type": "file", "maxResults": max}, &found); err != nil {
		return nil, protocolError(err, "")
	}
	res := &mcp.ListResourcesResult{Resources: []*mcp.Resource{}}
	for _, e := range found.Entries {
		if e.Path <= after {
			continue
		}
		if len(res.Resources) == ResourcePageSize {
			res.NextCursor = base64.RawURLEncoding.EncodeToString([]byte(res.Resources[len(res.Resources)-1].Name))
			break
		}
		res.Resources = append(res.Resources, &mcp.Resource{URI: ResourceURI(e.Path), Name: e.Path, Size: e.SizeBytes, MIMEType: mime.TypeByExtension(path.Ext(e.Path))})
	}
	return res, nil
}

// isNotFound reports whether err is a verb's not_found or not_a_directory.
func isNotFound(err error) bool {
	var xe *executor.Error
	return errors.As(err, &xe) && (xe.Code == executor.CodeNotFound || xe.Code == executor.CodeNotADirectory)
}
