package surface_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/activity"
	"github.com/wardenmcp/warden/callers"
	"github.com/wardenmcp/warden/config"
	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/internal/testing/testenv"
)

// callersEnv serves fx behind known callers: "ro" (profile readonly, the
// read tools), "dev" (write_* and echo of fx) and "nobody" (a profile
// allowing nothing).
func callersEnv(t *testing.T) *env {
	t.Helper()
	fx := fixture.NewServer(fixture.Options{})
	e := newEnv(t, fmt.Sprintf(`{"fx": {"url": %q, "trusted": true}}`, fx.Serve(t)), 0, 0)
	cfg, err := config.Parse("", []byte(`{
		"clients": {
			"ro": {"tokenSha256": "`+testenv.TokenSHA256("ro-token")+`", "profile": "readonly"},
			"dev": {"tokenSha256": "`+testenv.TokenSHA256("dev-token")+`", "profile": "dev"},
			"nobody": {"tokenSha256": "`+testenv.TokenSHA256("nobody-token")+`", "profile": "none"}
		},
		"profiles": {"readonly": {"classes": ["read"]}, "dev": {"servers": {"fx": {"tools": ["write_*", "echo"]}}}, "none": {"servers": {}}}
	}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	e.S.SetCallers(callers.New(cfg))
	e.WaitListed(t, "fx")
	return e
}

// connectAs is connect with a token.
func (e *env) connectAs(t *testing.T, token, path string, so *mcp.ClientSessionOptions) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: e.URL + path, HTTPClient: &http.Client{Transport: testenv.Bearer(token)}}, so)
	if err != nil {
		t.Fatalf("connect %s: %v", path, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// Without a valid token a request is answered 401, saying why in
// WWW-Authenticate, on every endpoint.
func TestCallersNeedAToken(t *testing.T) {
	e := callersEnv(t)
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	for _, path := range []string{"/mcp", "/mcp/fx", "/mcp?view=search"} {
		for token, want := range map[string]string{"": "no bearer token", "Bearer wrong": "not one Warden knows", "Basic eDp5": "not a bearer token"} {
			h := map[string]string{}
			if token != "" {
				h["Authorization"] = token
			}
			resp, body := rawPost(t, e.URL+path, init, h)
			if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer ") ||
				!strings.Contains(resp.Header.Get("WWW-Authenticate"), want) || !strings.Contains(body, want) || strings.Contains(body, "wrong") {
				t.Errorf("%s with %q: %d %q %s", path, token, resp.StatusCode, resp.Header.Get("WWW-Authenticate"), body)
			}
		}
		// A GET (the event stream) too.
		req, _ := http.NewRequest(http.MethodGet, e.URL+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s without a token: %d", path, resp.StatusCode)
		}
	}
}

// Each caller sees and calls only what its profile allows, in both eras,
// on /mcp and /mcp/fx, by the fast path and the SDK server's; a call
// outside is refused NOT_PERMITTED and recorded with who made it.
func TestCallersSeeTheirProfile(t *testing.T) {
	e := callersEnv(t)
	for _, fast := range []bool{true, false} {
		if !fast {
			e.S.DisableFastPath()
		}
		for _, era := range []*mcp.ClientSessionOptions{session2025, nil} {
			for _, path := range []string{"/mcp", "/mcp/fx"} {
				name := func(tool string) string {
					if path == "/mcp" {
						return "fx__" + tool
					}
					return tool
				}
				what := fmt.Sprintf("%s fast %t 2025 %t", path, fast, era != nil)
				for token, want := range map[string][]string{
					"ro-token":     {name(fixture.ToolEcho), name(fixture.ToolRead)},
					"dev-token":    {name(fixture.ToolEcho), name(fixture.ToolWrite)},
					"nobody-token": nil,
				} {
					cs := e.connectAs(t, token, path, era)
					if got := toolNames(t, cs); !slices.Equal(got, want) {
						t.Errorf("%s: %s sees %v, want %v", what, token, got, want)
					}
				}
				ro, dev := e.connectAs(t, "ro-token", path, era), e.connectAs(t, "dev-token", path, era)
				text, isErr, code, err := callText(t, ro, name(fixture.ToolWrite), map[string]any{"value": "x"})
				if err != nil || !isErr || code != "NOT_PERMITTED" || !strings.Contains(text, "profile readonly") || !strings.Contains(text, `client "ro"`) {
					t.Errorf("%s: ro writes: %q %v %q (%v)", what, text, isErr, code, err)
				}
				if _, isErr, code, err := callText(t, dev, name(fixture.ToolWrite), map[string]any{"value": "x"}); err != nil || isErr {
					t.Errorf("%s: dev writes: %v %q (%v)", what, isErr, code, err)
				}
				if _, _, code, _ := callText(t, dev, name(fixture.ToolRead), map[string]any{}); code != "NOT_PERMITTED" {
					t.Errorf("%s: dev reads: %q, want NOT_PERMITTED", what, code)
				}
			}
		}
	}
	e.Activity.Flush()
	if es, _ := e.Activity.Query(activity.Filter{User: "ro"}, 0); len(es) != 8 || es[0].Code != "NOT_PERMITTED" {
		t.Errorf("ro's calls: %d %+v", len(es), es)
	}
}

// The search view finds only what the caller may call, and call_tool
// refuses the rest.
func TestCallersSearchView(t *testing.T) {
	e := callersEnv(t)
	for _, era := range []*mcp.ClientSessionOptions{session2025, nil} {
		ro := e.connectAs(t, "ro-token", "/mcp?view=search", era)
		if names := toolNames(t, ro); !slices.Equal(names, []string{"call_tool", "search_tools"}) {
			t.Fatalf("the search view lists %v", names)
		}
		tools, _ := search(t, ro, map[string]any{"query": "value key store read delete"})
		var names []string
		for _, f := range tools {
			names = append(names, f.Name)
		}
		if !slices.Equal(names, []string{"fx__read_value"}) {
			t.Errorf("ro finds %v", names)
		}
		_, isErr, code, err := callText(t, ro, "call_tool", map[string]any{"name": "fx__write_value", "arguments": map[string]any{"value": "x"}})
		if err != nil || !isErr || code != "NOT_PERMITTED" {
			t.Errorf("ro's call_tool of a write: %v %q (%v)", isErr, code, err)
		}
	}
}

// forged sends a token and a Warden-Caller header of the client's own.
type forged struct{ token, caller string }

func (f forged) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Warden-Caller", f.caller)
	return testenv.Bearer(f.token).RoundTrip(r)
}

// A caller cannot say who it is but by its token: the header that carries
// the caller inside Warden, sent by a client, is dropped.
func TestCallersCannotForgeTheCallerHeader(t *testing.T) {
	e := callersEnv(t)
	for _, era := range []*mcp.ClientSessionOptions{session2025, nil} {
		c := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, nil)
		cs, err := c.Connect(ctx(t), &mcp.StreamableClientTransport{Endpoint: e.URL + "/mcp", HTTPClient: &http.Client{Transport: forged{"ro-token", `{"Client":"dev"}`}}}, era)
		if err != nil {
			t.Fatal(err)
		}
		if got := toolNames(t, cs); !slices.Equal(got, []string{"fx__echo", "fx__read_value"}) {
			t.Errorf("ro, saying it is dev, sees %v", got)
		}
		if _, _, code, _ := callText(t, cs, "fx__write_value", map[string]any{"value": "x"}); code != "NOT_PERMITTED" {
			t.Errorf("ro, saying it is dev, writes: %q", code)
		}
		cs.Close()
	}
}

// A change of what a caller may see reaches its live session as
// list_changed; its next list is the new one.
func TestCallersChangeReachesLiveSessions(t *testing.T) {
	e := callersEnv(t)
	changed := make(chan struct{}, 8)
	c := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	cs, err := c.Connect(ctx(t), &mcp.StreamableClientTransport{Endpoint: e.URL + "/mcp", HTTPClient: &http.Client{Transport: testenv.Bearer("ro-token")}}, session2025)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if got := toolNames(t, cs); !slices.Equal(got, []string{"fx__echo", "fx__read_value"}) {
		t.Fatalf("ro sees %v", got)
	}
	cfg, err := config.Parse("", []byte(`{"clients": {"ro": {"tokenSha256": "`+testenv.TokenSHA256("ro-token")+`", "profile": "*"}}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	e.S.SetCallers(callers.New(cfg))
	select {
	case <-changed:
	case <-time.After(20 * time.Second):
		t.Fatal("no list_changed after the caller's profile changed")
	}
	if got := toolNames(t, cs); !slices.Equal(got, []string{"fx__delete_value", "fx__echo", "fx__read_value", "fx__write_value"}) {
		t.Errorf("ro, now with every tool, sees %v", got)
	}
}

// A server's prompts, resources and completions go with its tools: a
// caller whose profiles allow nothing of the server neither sees nor
// reaches them.
func TestCallersPromptsAndResources(t *testing.T) {
	fx, rich := fixture.NewServer(fixture.Options{}), fixture.NewRich(t)
	e := newEnv(t, fmt.Sprintf(`{"fx": {"url": %q, "trusted": true}, "rich": {"url": %q, "trusted": true}}`, fx.Serve(t), rich.URL), 0, 0)
	cfg, err := config.Parse("", []byte(`{
		"clients": {
			"dev": {"tokenSha256": "`+testenv.TokenSHA256("dev-token")+`", "profile": "dev"},
			"all": {"tokenSha256": "`+testenv.TokenSHA256("all-token")+`", "profile": "*"}
		},
		"profiles": {"dev": {"servers": {"fx": {}}}}
	}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	e.S.SetCallers(callers.New(cfg))
	e.WaitListed(t, "fx")
	e.WaitListed(t, "rich")
	prompt := "rich__" + fixture.RichPrompt
	for _, era := range []*mcp.ClientSessionOptions{session2025, nil} {
		for token, sees := range map[string]bool{"dev-token": false, "all-token": true} {
			cs := e.connectAs(t, token, "/mcp", era)
			ps, err := cs.ListPrompts(ctx(t), nil)
			if err != nil || slices.ContainsFunc(ps.Prompts, func(p *mcp.Prompt) bool { return p.Name == prompt }) != sees {
				t.Errorf("%s lists prompts %+v (%v)", token, ps, err)
			}
			rs, err := cs.ListResources(ctx(t), nil)
			if err != nil || slices.ContainsFunc(rs.Resources, func(r *mcp.Resource) bool { return r.URI == fixture.RichResource }) != sees {
				t.Errorf("%s lists resources %+v (%v)", token, rs, err)
			}
			ts, err := cs.ListResourceTemplates(ctx(t), nil)
			if err != nil || slices.ContainsFunc(ts.ResourceTemplates, func(r *mcp.ResourceTemplate) bool { return r.URITemplate == fixture.RichTemplate }) != sees {
				t.Errorf("%s lists templates %+v (%v)", token, ts, err)
			}
			_, errP := cs.GetPrompt(ctx(t), &mcp.GetPromptParams{Name: prompt, Arguments: map[string]string{"who": "x"}})
			_, errR := cs.ReadResource(ctx(t), &mcp.ReadResourceParams{URI: fixture.RichResource})
			_, errC := cs.Complete(ctx(t), &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: prompt}, Argument: mcp.CompleteParamsArgument{Name: "who", Value: "a"}})
			for what, err := range map[string]error{"prompts/get": errP, "resources/read": errR, "completion/complete": errC} {
				if sees && err != nil || !sees && (err == nil || !strings.Contains(err.Error(), "NOT_PERMITTED") || !strings.Contains(err.Error(), `client "dev"`)) {
					t.Errorf("%s: %s: %v", token, what, err)
				}
			}
		}
	}
}

// A session is its caller's: another caller's token on it is refused,
// whatever that token may do on a session of its own.
func TestCallersSessionIsTheirs(t *testing.T) {
	e := callersEnv(t)
	ro := e.connectAs(t, "ro-token", "/mcp", session2025)
	list := `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`
	for token, want := range map[string]int{"dev-token": http.StatusForbidden, "ro-token": http.StatusOK} {
		resp, body := rawPost(t, e.URL+"/mcp", list, map[string]string{"Authorization": "Bearer " + token, "Mcp-Session-Id": ro.ID(), "Mcp-Protocol-Version": "2025-11-25"})
		if resp.StatusCode != want || want == http.StatusForbidden && !strings.Contains(body, "begun by another caller") {
			t.Errorf("%s on ro's session: %d %s", token, resp.StatusCode, body)
		}
	}
}
