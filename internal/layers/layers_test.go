package layers

import (
	"go/build"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/wardenmcp/warden"

// above are packages that must not reach upstream other than through the
// gateway, the one layer between them and the connections.
var above = []string{"surface", "api"}

// beside are the packages that work with upstream on its own level, which
// the ones above may use: the gateway, and oauth, which gives upstream its
// credentials.
var beside = map[string]bool{"gateway": true, "oauth": true}

// TestAboveTheGatewayNoUpstream walks the Warden packages each of above
// imports, not descending into those beside upstream, and fails if it
// meets upstream: a type of upstream would then be in the surfaces' or the
// API's hands.
func TestAboveTheGatewayNoUpstream(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	for _, start := range above {
		// via maps each package reached to the one that imports it.
		via := map[string]string{start: ""}
		queue := []string{start}
		for len(queue) > 0 {
			rel := queue[0]
			queue = queue[1:]
			p, err := build.ImportDir(filepath.Join(root, rel), build.ImportComment)
			if err != nil {
				t.Fatalf("%s: %v", rel, err)
			}
			if rel == start { // its tests too, by what they import themselves
				for _, imp := range append(p.TestImports, p.XTestImports...) {
					if imp == module+"/upstream" {
						t.Errorf("%s's tests import upstream", start)
					}
				}
			}
			for _, imp := range p.Imports {
				dep, ok := strings.CutPrefix(imp, module+"/")
				if !ok || beside[dep] {
					continue
				}
				if _, seen := via[dep]; seen {
					continue
				}
				via[dep] = rel
				if dep == "upstream" {
					t.Errorf("%s reaches upstream, not through a package beside it: %s", start, chain(via, dep))
					continue
				}
				queue = append(queue, dep)
			}
		}
		if len(via) < 2 {
			t.Fatalf("%s: no Warden imports found; is %s the module's root?", start, root)
		}
	}
}

// chain spells the imports that lead to dep, the start first.
func chain(via map[string]string, dep string) string {
	path := []string{dep}
	for p := via[dep]; p != ""; p = via[p] {
		path = append([]string{p}, path...)
	}
	return strings.Join(path, " → ")
}
