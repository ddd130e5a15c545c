package mcp

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxCompletions is the most values one completion answer holds (the
// specification's bound).
const maxCompletions = 100

// complete answers completion/complete. The path of the resource template
// completes to the names under the typed prefix: an fs.listDir turn of the
// directory the prefix names, so it is role-checked, confined and
// mirrored like the listing; a directory ends with "/". A prompt's (a
// named command's) enum argument completes to its values (prompts.go).
// The protocol has no reference to a tool's arguments (only ref/prompt
// and ref/resource).
func (s *Server) complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	ref := req.Params.Ref
	if ref.Type == "ref/prompt" {
		values, err := s.completePrompt(ref.Name, req.Params.Argument.Name, req.Params.Argument.Value)
		if err != nil {
			return nil, err
		}
		return completion(values), nil
	}
	switch {
	case ref.URI != PathTemplate:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("no resource template %q: the hub's one template is %s", ref.URI, PathTemplate)}
	case req.Params.Argument.Name != "path":
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("the template %s has no argument %q; its one argument is path", PathTemplate, req.Params.Argument.Name)}
	}
	values, err := s.completePath(ctx, req.Session, req.Extra, req.Params.Argument.Value)
	if err != nil {
		return nil, err
	}
	return completion(values), nil
}

// completion is the answer with values, at most maxCompletions of them.
func completion(values []string) *mcp.CompleteResult {
	res := &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: values, Total: len(values)}}
	if len(values) > maxCompletions {
		res.Completion.Values, res.Completion.HasMore = values[:maxCompletions], true
	}
	return res
}

// listDirResult is the part of fs.listDir's result a completion uses.
type listDirResult struct {
	Entries []struct {
		Name        string `json:"name"`
		IsDirectory bool   `json:"isDirectory"`
	} `json:"entries"`
}

// completePath is every workspace path that continues typed by one name
// of the directory it leads into, directories first. A directory that is
// not there (yet) completes to nothing.
func (s *Server) completePath(ctx context.Context, ss *mcp.ServerSession, extra *mcp.RequestExtra, typed string) ([]string, error) {
	dir, prefix := "", typed
	if i := strings.LastIndexByte(typed, '/'); i >= 0 {
		dir, prefix = typed[:i+1], typed[i+1:]
	}
	var ls listDirResult
	if err := s.turn(ctx, ss, extra, "fs.listDir", map[string]string{"path": orDot(strings.TrimSuffix(dir, "/"))}, &ls); err != nil {
		if isNotFound(err) {
			return []string{}, nil
		}
		return nil, protocolError(err, "")
	}
	values := []string{}
	for _, e := range ls.Entries {
		if !strings.HasPrefix(e.Name, prefix) {
			continue
		}
		v := dir + e.Name
		if e.IsDirectory {
			v += "/"
		}
		values = append(values, v)
	}
	return values, nil
}

func orDot(p string) string {
	if p == "" {
		return "."
	}
	return p
}
