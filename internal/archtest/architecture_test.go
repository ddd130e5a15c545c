package archtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The layers of docs/architecture.md ("The layers, as rules"), one rule a
// sentence. Names are packages of the module ("store") or import paths
// ("net/http"); "x/..." is x and every package below it, "..." every
// package of the module.
var rules = slices.Concat([]rule{
	{doc: "`clock`, `internal/posix` and `internal/jsonstr` import no other package of the hub.",
		pkgs: []string{"clock", "internal/posix", "internal/jsonstr"}, only: nothing},
	{doc: "`chat` holds platform-neutral types: it imports no other package of the hub and does no I/O (no `os`, `net`, `syscall`).",
		pkgs: []string{"chat"}, only: nothing, imports: []string{"os", "os/exec", "net", "net/http", "syscall"}},
	{doc: "`config` knows only `chat`.",
		pkgs: []string{"config/..."}, only: []string{"chat", "config/..."}},
	{doc: "The executor core imports only `clock` and `internal/jsonstr` (JSON strings); it opens no file and starts no process (no `os`, `os/exec`, `syscall`).",
		pkgs: []string{"executor"}, only: []string{"clock", "internal/jsonstr"}, imports: []string{"os", "os/exec", "syscall"}},
	{doc: "`verbs` know only `executor`'s types, `clock`, `internal/posix` and their own subpackages: they parse no chat text and know no platform.",
		pkgs: []string{"verbs/..."}, except: []string{"verbs/boltmeta", "verbs/internal/verbtest"}, only: []string{"executor", "clock", "internal/posix", "verbs/..."}},
	{doc: "`verbs/boltmeta` keeps session file metadata in hub.db: it knows `verbs` and `store` only.",
		pkgs: []string{"verbs/boltmeta"}, only: []string{"verbs", "store"}},
	{doc: "`store` knows no verb, no outbox and no hub: it imports only `chat`, `clock` and `internal/jsonstr`.",
		pkgs: []string{"store"}, only: []string{"chat", "clock", "internal/jsonstr"}},
	{doc: "`outbox` knows `chat`, `store` and `clock` only, and no platform's API.",
		pkgs: []string{"outbox"}, only: []string{"chat", "store", "clock"}, reaches: platformAPIs},
	{doc: "`hub` knows `chat`, `clock`, `config`, `executor`, `outbox`, `store` and `workspaces/policy`: never a verb, a node or an adapter.",
		pkgs: []string{"hub"}, only: []string{"chat", "clock", "config", "executor", "outbox", "store", "workspaces/policy"}},
	{doc: "`hub` imports no bbolt (it keeps its state through `store`) and reaches no `net/http`, no NATS and no platform's API.",
		pkgs: []string{"hub"}, imports: []string{"go.etcd.io/bbolt/..."},
		reaches: append([]string{"net/http", "github.com/nats-io/..."}, platformAPIs...)},
	{doc: "An adapter never imports `store` (it reaches the state through the hub's intake and `admin`) and reaches no verb, no workspace runner and no node.",
		pkgs: []string{"adapters/..."}, imports: []string{"store"}, reaches: []string{"verbs/...", "workspaces", "workspaces/docker", "nodes"}},
	{doc: "The core starts no program: `chat`, `clock`, `executor`, `store`, `outbox`, `hub`, `admin`, `metrics` and the adapters reach no `os/exec` and no gopsutil, except through the MCP library's `mcp` package, which links `os/exec` for its `CommandTransport` (a client starting a server); no package of the hub uses that.",
		pkgs:    []string{"chat", "clock", "executor", "store", "outbox", "hub", "admin", "metrics", "adapters/..."},
		reaches: []string{"os/exec", "github.com/shirou/gopsutil/..."}, via: []string{"github.com/modelcontextprotocol/go-sdk/mcp"}},
	{doc: "`admin` serves the runtime (`hub`, `outbox`, `store`, `workspaces/policy`): it reaches no verb, no workspace runner, no node and no adapter.",
		pkgs: []string{"admin"}, reaches: []string{"verbs/...", "workspaces", "workspaces/docker", "nodes", "adapters/..."}},
	{doc: "`metrics` reads the hub and the outbox: it reaches no verb, no workspace runner, no node and no adapter.",
		pkgs: []string{"metrics"}, reaches: []string{"verbs/...", "workspaces", "workspaces/docker", "nodes", "adapters/..."}},
	{doc: "`workspaces` open the verbs' workspaces and their runners: they reach no `hub`, `outbox`, `store`, `admin`, `metrics`, node or adapter.",
		pkgs: []string{"workspaces/..."}, reaches: []string{"hub/...", "outbox", "store", "admin", "metrics", "nodes", "adapters/..."}},
	{doc: "`workspaces/policy` imports no verbs, so the hub can use it: it knows `chat` and `config` only.",
		pkgs: []string{"workspaces/policy"}, only: []string{"chat", "config"}},
	{doc: "`nodes` knows `clock`, `config`, `executor` and `store` only: the hub calls a node through its `Remote` interface, which `cmd/hub` fills with `nodes`.",
		pkgs: []string{"nodes"}, only: []string{"clock", "config", "executor", "store"}},
	{doc: "`internal/netlimit` knows `clock` only.",
		pkgs: []string{"internal/netlimit"}, only: []string{"clock"}},
	{doc: "Nothing imports `cmd/...`: `cmd/hub` is the composition root.",
		pkgs: []string{"..."}, except: []string{"cmd/..."}, reaches: []string{"cmd/..."}},
	{doc: "No package reaches `testing` or a test harness (`hub/hubtest`, `internal/testkit`, `internal/dockertest`, `internal/loopback`, `internal/natstest`, `verbs/internal/verbtest`, the platforms' fakes, `lab`), but the harnesses themselves.",
		pkgs: []string{"..."}, except: harnesses, reaches: append([]string{"testing"}, harnesses...)},
}, apart("An adapter never reaches into another adapter.",
	"adapters/web/...", "adapters/telegram/...", "adapters/discord/...", "adapters/mcp/..."))

// platformAPIs are the libraries of the chat platforms' APIs.
var platformAPIs = []string{"github.com/bwmarrin/discordgo", "github.com/go-telegram-bot-api/...", "github.com/gorilla/websocket"}

// harnesses are the packages only tests use.
var harnesses = []string{"hub/hubtest", "internal/testkit", "internal/dockertest", "internal/loopback", "internal/natstest", "verbs/internal/verbtest",
	"adapters/discord/discordtest", "adapters/telegram/telegramtest", "lab"}

// neverUsed are what a library the hub links holds that no package of the
// hub may use, each with the rule that relies on it.
var neverUsed = []struct{ pkg, name, why string }{
	{"github.com/modelcontextprotocol/go-sdk/mcp", "CommandTransport", "it starts a program, and the core starts none"},
}

// nothing is an only that allows no package of the module.
var nothing = []string{}

// module is the import path of the hub's module.
const module = "github.com/a6afc2ce/hermes-hub"

// systems are the operating systems the hub builds for; some files are
// built for one only, so the rules are checked for each.
var systems = []string{"linux", "darwin", "windows"}

// rule is one sentence of docs/architecture.md as a check. A name in any
// of its lists that matches no package fails the test, so a renamed
// package cannot empty a rule unseen.
type rule struct {
	// doc is the rule as docs/architecture.md states it, word for word.
	doc string
	// pkgs are the packages the rule binds, but those in except.
	pkgs, except []string
	// imports are never imported by a bound package itself.
	imports []string
	// reaches are never imported by a bound package, nor by anything it
	// imports however far down, unless the way passes through a package
	// of via, which the check does not enter.
	reaches, via []string
	// only, unless nil, is every package of the module a bound package
	// may import.
	only []string
}

// apart gives, for each of the packages, the rule that it reaches none of
// the others.
func apart(doc string, pkgs ...string) []rule {
	rs := make([]rule, 0, len(pkgs))
	for i, p := range pkgs {
		others := slices.Delete(slices.Clone(pkgs), i, i+1)
		rs = append(rs, rule{doc: doc, pkgs: []string{p}, reaches: others})
	}
	return rs
}

func TestArchitecture(t *testing.T) {
	page, err := os.ReadFile(filepath.Join("..", "..", "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := collapse(string(page))
	stated := map[string]bool{}
	for _, r := range rules {
		if !stated[r.doc] && !strings.Contains(text, collapse(r.doc)) {
			t.Errorf("docs/architecture.md does not state the rule %q: the page and this test must say the same", r.doc)
		}
		stated[r.doc] = true
	}
	for _, goos := range systems {
		t.Run(goos, func(t *testing.T) {
			g := load(t, goos)
			for _, r := range rules {
				broken, err := g.check(r)
				if err != nil {
					t.Errorf("%v\n\trule: %s", err, r.doc)
				}
				for _, b := range broken {
					t.Errorf("%s\n\trule: %s", b, r.doc)
				}
			}
			for _, u := range neverUsed {
				uses, err := g.uses(u.pkg, u.name)
				if err != nil {
					t.Error(err)
				}
				for _, at := range uses {
					t.Errorf("%s uses %s.%s: %s", at, short(u.pkg), u.name, u.why)
				}
			}
		})
	}
}

// TestCheckNamesThePath checks the checker on a graph of its own: each
// broken rule names the importing package, the forbidden import and the
// shortest path to it, and a name matching no package is an error.
func TestCheckNamesThePath(t *testing.T) {
	m := func(p string) string { return module + "/" + p }
	g := &graph{imports: map[string][]string{
		m("a"):    {m("b"), "lib/x"},
		m("b"):    {m("c")},
		m("c"):    {"os/exec"},
		"lib/x":   {"os/exec"},
		"os/exec": nil,
	}}
	for _, tc := range []struct {
		name string
		r    rule
		want []string
	}{
		{"reach through the module", rule{pkgs: []string{"a"}, reaches: []string{"c"}}, []string{"a reaches c: a → b → c"}},
		{"shortest way", rule{pkgs: []string{"a"}, reaches: []string{"os/exec"}}, []string{"a reaches os/exec: a → lib/x → os/exec"}},
		{"via is not entered", rule{pkgs: []string{"a"}, reaches: []string{"os/exec"}, via: []string{"lib/x"}}, []string{"a reaches os/exec: a → b → c → os/exec"}},
		{"direct import", rule{pkgs: []string{"a"}, imports: []string{"lib/x"}}, []string{"a imports lib/x: a → lib/x"}},
		{"only the module counts", rule{pkgs: []string{"a"}, only: []string{"b"}}, nil},
		{"only", rule{pkgs: []string{"..."}, except: []string{"c"}, only: nothing}, []string{
			"a imports b, and it may import no other package of the module: a → b",
			"b imports c, and it may import no other package of the module: b → c"}},
		{"only lists", rule{pkgs: []string{"a"}, only: []string{"c"}}, []string{"a imports b, and of the module it may import only c: a → b"}},
		{"held", rule{pkgs: []string{"c"}, reaches: []string{"a", "lib/x"}}, nil},
	} {
		got, err := g.check(tc.r)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s: check = %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
	for _, r := range []rule{{pkgs: []string{"d"}}, {pkgs: []string{"a"}, reaches: []string{"lib/y"}}, {pkgs: []string{"a"}, except: []string{"a"}}} {
		if _, err := g.check(r); err == nil {
			t.Errorf("check(%+v) accepted a rule that binds or names no package", r)
		}
	}
}

// graph is the import graph of the module's packages and everything they
// import, for one operating system, without tests.
type graph struct {
	imports map[string][]string // import path → the import paths it imports
	files   map[string][]string // import path → its Go files
}

// load lists the module's packages and their dependencies for goos.
func load(t *testing.T, goos string) *graph {
	t.Helper()
	cmd := exec.Command("go", "list", "-e", "-deps", "-json=ImportPath,Dir,GoFiles,Imports,Error", module+"/...")
	cmd.Env = append(os.Environ(), "GOOS="+goos)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list for %s: %v\n%s", goos, err, stderr.Bytes())
	}
	g := &graph{imports: map[string][]string{}, files: map[string][]string{}}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath, Dir  string
			GoFiles, Imports []string
			Error            *struct{ Err string }
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list for %s: %v", goos, err)
		}
		if p.Error != nil {
			t.Fatalf("go list for %s: %s: %s", goos, p.ImportPath, p.Error.Err)
		}
		g.imports[p.ImportPath] = p.Imports
		for _, f := range p.GoFiles {
			g.files[p.ImportPath] = append(g.files[p.ImportPath], filepath.Join(p.Dir, f))
		}
	}
	return g
}

// check returns each way g breaks r, one line each; an error when r binds
// or names no package.
func (g *graph) check(r rule) ([]string, error) {
	bound, err := g.bound(r)
	if err != nil {
		return nil, err
	}
	var lists [4][]pattern
	for i, names := range [][]string{r.imports, r.reaches, r.via, r.only} {
		if lists[i], err = g.resolve(names); err != nil {
			return nil, err
		}
	}
	imports, reaches, via, only := lists[0], lists[1], lists[2], lists[3]
	var broken []string
	for _, p := range bound {
		for _, imp := range g.imports[p] {
			if matchAny(imports, imp) {
				broken = append(broken, fmt.Sprintf("%s imports %s: %s", short(p), short(imp), trail(p, imp)))
			}
			if r.only != nil && own(imp) && !matchAny(only, imp) {
				broken = append(broken, fmt.Sprintf("%s imports %s, and %s: %s", short(p), short(imp), allowed(r.only), trail(p, imp)))
			}
		}
		for _, path := range g.reach(p, reaches, via) {
			broken = append(broken, fmt.Sprintf("%s reaches %s: %s", short(p), short(path[len(path)-1]), trail(path...)))
		}
	}
	return broken, nil
}

// bound returns the packages of the module r binds, sorted.
func (g *graph) bound(r rule) ([]string, error) {
	in, err := g.resolve(r.pkgs)
	if err != nil {
		return nil, err
	}
	out, err := g.resolve(r.except)
	if err != nil {
		return nil, err
	}
	var bound []string
	for p := range g.imports {
		if own(p) && matchAny(in, p) && !matchAny(out, p) {
			bound = append(bound, p)
		}
	}
	if len(bound) == 0 {
		return nil, fmt.Errorf("the rule binds no package (pkgs %q, except %q)", r.pkgs, r.except)
	}
	slices.Sort(bound)
	return bound, nil
}

// reach returns, for each of forbidden that from imports however far down,
// the shortest path to the nearest package it matches. The walk enters no
// package matching via.
func (g *graph) reach(from string, forbidden, via []pattern) [][]string {
	parent := map[string]string{from: ""}
	found := make([]bool, len(forbidden))
	var paths [][]string
	for queue := []string{from}; len(queue) > 0; queue = queue[1:] {
		p := queue[0]
		if p != from {
			for i, f := range forbidden {
				if !found[i] && f.match(p) {
					found[i] = true
					paths = append(paths, pathTo(parent, p))
				}
			}
			if matchAny(via, p) {
				continue
			}
		}
		for _, imp := range g.imports[p] {
			if _, seen := parent[imp]; !seen {
				parent[imp] = p
				queue = append(queue, imp)
			}
		}
	}
	return paths
}

// uses returns where a package of the module uses lib's name (file:line),
// or an error if lib does not declare name (the check would be empty).
func (g *graph) uses(lib, name string) ([]string, error) {
	if _, ok := g.imports[lib]; !ok {
		return nil, fmt.Errorf("no package of the hub links %s: the check of %s.%s names a package that is gone", lib, short(lib), name)
	}
	if !g.declares(lib, name) {
		return nil, fmt.Errorf("%s declares no %s: the check names something that is gone", lib, name)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		return nil, err
	}
	var at []string
	fset := token.NewFileSet()
	for p, files := range g.files {
		if !own(p) {
			continue
		}
		for _, file := range files {
			f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
			if err != nil {
				return nil, err
			}
			local := importedAs(f, lib)
			if local == "" {
				continue
			}
			ast.Inspect(f, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok && sel.Sel.Name == name {
					if x, ok := sel.X.(*ast.Ident); ok && x.Name == local {
						pos := fset.Position(sel.Pos())
						if rel, err := filepath.Rel(root, pos.Filename); err == nil {
							pos.Filename = rel
						}
						at = append(at, pos.String())
					}
				}
				return true
			})
		}
	}
	slices.Sort(at)
	return at, nil
}

// declares reports whether the package declares name at its top level.
func (g *graph) declares(pkg, name string) bool {
	fset := token.NewFileSet()
	for _, file := range g.files[pkg] {
		f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
		if err == nil && declared(f, name) {
			return true
		}
	}
	return false
}

// declared reports whether f declares name at its top level.
func declared(f *ast.File, name string) bool {
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil && d.Name.Name == name {
				return true
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					if s.Name.Name == name {
						return true
					}
				case *ast.ValueSpec:
					if slices.ContainsFunc(s.Names, func(id *ast.Ident) bool { return id.Name == name }) {
						return true
					}
				}
			}
		}
	}
	return false
}

// importedAs is the name f refers to the package path by, or "" when f
// does not import it (or imports it for its side effects only).
func importedAs(f *ast.File, path string) string {
	for _, s := range f.Imports {
		if p, err := strconv.Unquote(s.Path.Value); err != nil || p != path {
			continue
		}
		if s.Name != nil {
			if s.Name.Name == "_" {
				return ""
			}
			return s.Name.Name
		}
		return path[strings.LastIndex(path, "/")+1:]
	}
	return ""
}

// pattern is a resolved name: one import path, or with tree, the path and
// every path below it.
type pattern struct {
	path string
	tree bool
}

func (p pattern) match(path string) bool {
	return path == p.path || p.tree && strings.HasPrefix(path, p.path+"/")
}

// resolve turns names into patterns: a name is a package of the module
// when one matches it, else an import path. A name that matches no
// package, or both, is an error.
func (g *graph) resolve(names []string) ([]pattern, error) {
	ps := make([]pattern, 0, len(names))
	for _, n := range names {
		tree := n == "..." || strings.HasSuffix(n, "/...")
		base := strings.TrimSuffix(strings.TrimSuffix(n, "..."), "/")
		ours, theirs := pattern{module + "/" + base, tree}, pattern{base, tree}
		if base == "" {
			ours.path = module
		}
		isOurs, isTheirs := g.matches(ours), base != "" && g.matches(theirs)
		switch {
		case isOurs && isTheirs:
			return nil, fmt.Errorf("the rule names %q, which is both %s and %s: spell it out", n, ours.path, theirs.path)
		case isOurs:
			ps = append(ps, ours)
		case isTheirs:
			ps = append(ps, theirs)
		default:
			return nil, fmt.Errorf("the rule names %q, which matches no package of the graph", n)
		}
	}
	return ps, nil
}

// matches reports whether any package of g matches p.
func (g *graph) matches(p pattern) bool {
	for path := range g.imports {
		if p.match(path) {
			return true
		}
	}
	return false
}

func matchAny(ps []pattern, path string) bool {
	return slices.ContainsFunc(ps, func(p pattern) bool { return p.match(path) })
}

// own reports whether path is a package of the module.
func own(path string) bool { return path == module || strings.HasPrefix(path, module+"/") }

// short is path as the rules spell it: relative to the module for its own
// packages.
func short(path string) string { return strings.TrimPrefix(path, module+"/") }

// trail spells a path of imports "a → b → c".
func trail(path ...string) string {
	s := make([]string, len(path))
	for i, p := range path {
		s[i] = short(p)
	}
	return strings.Join(s, " → ")
}

// allowed says what an only list permits.
func allowed(only []string) string {
	if len(only) == 0 {
		return "it may import no other package of the module"
	}
	return "of the module it may import only " + strings.Join(only, ", ")
}

// pathTo is the path from the walk's start to p, by parent links.
func pathTo(parent map[string]string, p string) []string {
	var path []string
	for ; p != ""; p = parent[p] {
		path = append(path, p)
	}
	slices.Reverse(path)
	return path
}

// collapse folds every run of white space into one space, so a sentence
// wrapped across lines still matches.
func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }
