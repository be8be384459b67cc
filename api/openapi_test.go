package api

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Every route the API serves is in GET /v1/openapi.json, with a summary, its
// parameters and its answer's schema, and in the README's list; the
// document needs no token.
func TestOpenAPI(t *testing.T) {
	h := Handler(Deps{Version: "test", Token: "tok", Config: func() ConfigInfo { return ConfigInfo{} }})
	srv := httptest.NewServer(h)
	defer srv.Close()

	resp, err := http.Get(srv.URL + "/v1/openapi.json") // no token
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc struct {
		OpenAPI string `json:"openapi"`
		Info    struct{ Version string }
		Paths   map[string]map[string]struct {
			OperationID string `json:"operationId"`
			Summary     string
			Security    *[]any
			Parameters  []struct{ Name, In string }
			Responses   map[string]struct {
				Content map[string]struct{ Schema map[string]any }
			}
		}
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET /v1/openapi.json without a token: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if doc.OpenAPI != "3.1.0" || doc.Info.Version != "test" {
		t.Fatalf("openapi %q, version %q", doc.OpenAPI, doc.Info.Version)
	}

	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	a := &handler{}
	public, private := a.muxes()
	ids := map[string]bool{}
	n := 0
	for path, ops := range doc.Paths {
		for method, op := range ops {
			n++
			method = strings.ToUpper(method)
			what := method + " " + path
			if op.Summary == "" || op.OperationID == "" || ids[op.OperationID] {
				t.Errorf("%s: summary %q, operationId %q (each needs both, ids unique)", what, op.Summary, op.OperationID)
			}
			ids[op.OperationID] = true
			ok := op.Responses["200"]
			if len(ok.Content) != 1 || op.Responses["default"].Content == nil {
				t.Errorf("%s: answers undocumented: %+v", what, op.Responses)
			}
			for _, c := range ok.Content {
				if len(c.Schema) == 0 {
					t.Errorf("%s: no schema for its answer", what)
				}
			}
			for _, p := range pathParam.FindAllStringSubmatch(path, -1) {
				found := false
				for _, param := range op.Parameters {
					found = found || param.In == "path" && param.Name == p[1]
				}
				if !found {
					t.Errorf("%s: path parameter %s undocumented", what, p[1])
				}
			}
			if !strings.Contains(string(readme), "`"+what+"`") {
				t.Errorf("%s is not in the README's list of routes", what)
			}
			// Served where documented, with or without the token as said.
			mux := private
			if op.Security != nil && len(*op.Security) == 0 {
				mux = public
			}
			req := httptest.NewRequest(method, strings.ReplaceAll(path, "{s}", "x"), nil)
			if _, pattern := mux.Handler(req); pattern != what {
				t.Errorf("%s is documented but served by %q", what, pattern)
			}
		}
	}
	if n != len(routes) {
		t.Errorf("the document has %d operations for %d routes", n, len(routes))
	}

	// Every other route needs the token, and an unknown one points here.
	req, _ := http.NewRequest("GET", srv.URL+"/v1/status", nil)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("GET /v1/status without a token: %d", resp.StatusCode)
	}
	req, _ = http.NewRequest("GET", srv.URL+"/v1/nosuch", nil)
	req.Header.Set("Authorization", "Bearer tok")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var e Error
	_ = json.NewDecoder(resp.Body).Decode(&e)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(e.Error.Message, "GET /v1/openapi.json") {
		t.Fatalf("unknown route: %d %+v", resp.StatusCode, e)
	}
}

// A route registered outside the table would be served undocumented: the
// package registers none with a literal pattern but the fallback.
func TestRoutesOnlyFromTheTable(t *testing.T) {
	files, _ := filepath.Glob("*.go")
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || (sel.Sel.Name != "HandleFunc" && sel.Sel.Name != "Handle") {
				return true
			}
			if lit, ok := call.Args[0].(*ast.BasicLit); ok {
				if p, _ := strconv.Unquote(lit.Value); p != "/v1/" {
					t.Errorf("%s: route %s registered outside the routes table (openapi.go), so undocumented", fset.Position(call.Pos()), p)
				}
			}
			return true
		})
	}
}

// A path the table serves, asked with another method, answers 405 with
// the methods it takes; a path it does not serve answers 404. Both point
// to the document.
func TestWrongMethodAndUnknownRoute(t *testing.T) {
	e := newEnv(t, `{}`)
	tests := []struct {
		method, path, allow string
		status              int
	}{
		{"POST", "/v1/status", "GET", http.StatusMethodNotAllowed},
		{"DELETE", "/v1/servers/x", "GET", http.StatusMethodNotAllowed},
		{"GET", "/v1/servers/x/approve", "POST", http.StatusMethodNotAllowed},
		{"GET", "/v1/writes/x", "DELETE", http.StatusMethodNotAllowed},
		{"PUT", "/v1/servers/x/auth", "GET, DELETE", http.StatusMethodNotAllowed},
		{"POST", "/v1/openapi.json", "GET", http.StatusMethodNotAllowed},
		{"GET", "/v1/nosuch", "", http.StatusNotFound},
		{"GET", "/v1/servers/x/nosuch", "", http.StatusNotFound},
		{"POST", "/v1/servers/x/y/approve", "", http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			rec := e.do(tt.method, tt.path, "")
			want := refusal{tt.status, "not_found", []string{"no route " + tt.method + " " + tt.path, "GET /v1/openapi.json"}}
			if tt.allow != "" {
				want = refusal{tt.status, "method_not_allowed", []string{tt.path + " takes " + strings.ReplaceAll(tt.allow, ", ", " or ") + ", not " + tt.method, "GET /v1/openapi.json"}}
			}
			expectError(t, rec, want)
			if got := rec.Header().Get("Allow"); got != tt.allow {
				t.Errorf("Allow: %q, want %q", got, tt.allow)
			}
		})
	}
}
