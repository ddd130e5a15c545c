package config

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines bounds every function of the package, so that each
// section's defaults and checks stay small enough to read at once.
const maxFuncLines = 80

// TestFunctionsAreShort: no function of the config package (tests aside)
// is longer than maxFuncLines lines, counted from its func line to its
// closing brace.
func TestFunctionsAreShort(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	longest, where := 0, ""
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok {
				continue
			}
			n := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
			if n > maxFuncLines {
				t.Errorf("%s: %s is %d lines long (at most %d): split it", fset.Position(fn.Pos()), fn.Name.Name, n, maxFuncLines)
			}
			if n > longest {
				longest, where = n, fn.Name.Name+" in "+name
			}
		}
	}
	t.Logf("the longest function is %s: %d lines", where, longest)
}
