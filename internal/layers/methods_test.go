package layers

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// maxMethods is the most methods a type of upstream may have: past it, a
// type does more than one job (#30).
const maxMethods = 30

// TestUpstreamTypesStaySmall counts the methods of each type declared in
// upstream (its non-test files) and fails for one over its limit.
func TestUpstreamTypesStaySmall(t *testing.T) {
	dir := filepath.Join("..", "..", "upstream")
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv != nil {
				count[receiver(fn.Recv.List[0].Type)]++
			}
		}
	}
	if count["Conn"] == 0 {
		t.Fatalf("no methods of Conn found in %s", dir)
	}
	for typ, n := range count {
		if n > maxMethods {
			t.Errorf("upstream.%s has %d methods, more than %d: split it by job", typ, n, maxMethods)
		}
	}
}

// receiver is the name of a method's receiver type.
func receiver(e ast.Expr) string {
	if s, ok := e.(*ast.StarExpr); ok {
		e = s.X
	}
	if g, ok := e.(*ast.IndexExpr); ok {
		e = g.X
	}
	id, _ := e.(*ast.Ident)
	if id == nil {
		return ""
	}
	return id.Name
}
