package api

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/wardenmcp/warden/approval"
	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/sessions"
)

// upstreamSecret is in a server's configured headers; no answer may show it.
const upstreamSecret = "upstream-secret-7c1e"

// standardEnv is four servers: fx (trusted, its echo tool hidden), q
// (untrusted, so quarantined), off (a disabled stdio server) and bad (an
// entry that cannot be loaded). fx and q are listed when it returns.
func standardEnv(t *testing.T) (*env, *fixture.Fixture, *fixture.Fixture) {
	t.Helper()
	fx, q := fixture.NewServer(fixture.Options{}), fixture.NewServer(fixture.Options{})
	e := newEnv(t, fmt.Sprintf(`{
		"fx": {"url": %q, "trusted": true, "headers": {"Authorization": "Bearer %s"}, "tools": {"echo": {"hidden": true}}},
		"q": {"url": %q},
		"off": {"command": "no-such-server", "disabled": true},
		"bad": {"command": 5}
	}`, fx.Serve(t), upstreamSecret, q.Serve(t)))
	e.WaitListed(t, "fx")
	e.WaitListed(t, "q")
	return e, fx, q
}

func TestStatusAndServers(t *testing.T) {
	e, _, _ := standardEnv(t)

	var st Status
	rec := e.do("GET", "/v1/status", "")
	decodeInto(t, rec, &st)
	if rec.Code != http.StatusOK || st.Version != "test" || st.Listen != "127.0.0.1:0" || st.ConfigPath == "" || st.UptimeSeconds < 0 {
		t.Fatalf("GET /v1/status: %d %+v", rec.Code, st)
	}
	names := []string{}
	all := 0
	for _, s := range st.Servers {
		names = append(names, s.Name)
		all += s.ToolTokens
	}
	if strings.Join(names, ",") != "bad,fx,off,q" {
		t.Errorf("status lists servers %v, want bad,fx,off,q", names)
	}
	if st.ViewTokens["search"] != 42 || st.ViewTokens["all"] != all || all == 0 {
		t.Errorf("view_tokens %v, want all=%d (the servers' tool_tokens, not 0) and search=42", st.ViewTokens, all)
	}

	var list []Server
	rec = e.do("GET", "/v1/servers", "")
	decodeInto(t, rec, &list)
	if rec.Code != http.StatusOK || len(list) != 4 {
		t.Fatalf("GET /v1/servers: %d %s", rec.Code, rec.Body)
	}
	byName := map[string]Server{}
	for _, s := range list {
		byName[s.Name] = s
	}
	tests := []struct {
		name  string
		check func(Server) bool
		want  string
	}{
		{"fx", func(s Server) bool {
			// echo is hidden: three tools cost tokens, four are approved.
			return s.Transport == "http" && s.Trusted && !s.Quarantined && s.State.State == "ready" &&
				s.Tools == approval.Counts{Approved: 4} && s.ToolTokens > 0 && strings.HasSuffix(s.Target, "/mcp")
		}, "trusted, ready, baseline of 4 approved tools, visible tools cost tokens"},
		{"q", func(s Server) bool {
			return !s.Trusted && s.Quarantined && s.State.State == "ready" && s.Tools == approval.Counts{Pending: 4} && s.ToolTokens == 0
		}, "untrusted, so quarantined with 4 pending tools that cost nothing"},
		{"off", func(s Server) bool {
			return s.Transport == "stdio" && s.Disabled && s.State.State == "stopped" && s.Target == "no-such-server"
		}, "disabled stdio server, stopped"},
		{"bad", func(s Server) bool {
			return s.Transport == "" && strings.Contains(s.ConfigError, "command") && s.State.State == "stopped"
		}, "an entry that cannot load, with the reason"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !tt.check(byName[tt.name]) {
				t.Errorf("GET /v1/servers shows %s as %+v; want %s", tt.name, byName[tt.name], tt.want)
			}
			var one Server
			rec := e.do("GET", "/v1/servers/"+tt.name, "")
			decodeInto(t, rec, &one)
			if rec.Code != http.StatusOK || !tt.check(one) {
				t.Errorf("GET /v1/servers/%s: %d %+v; want %s", tt.name, rec.Code, one, tt.want)
			}
		})
	}
}

func TestServerTools(t *testing.T) {
	e, fx, _ := standardEnv(t)
	var tools []Tool
	rec := e.do("GET", "/v1/servers/fx/tools", "")
	decodeInto(t, rec, &tools)
	if rec.Code != http.StatusOK || len(tools) != 4 {
		t.Fatalf("GET /v1/servers/fx/tools: %d %s", rec.Code, rec.Body)
	}
	want := map[string]struct {
		class  string
		hidden bool
	}{
		fixture.ToolRead: {"read", false}, fixture.ToolWrite: {"write", false},
		fixture.ToolDelete: {"destructive", false}, fixture.ToolEcho: {"read", true},
	}
	for _, tool := range tools {
		w, ok := want[tool.Name]
		if !ok {
			t.Errorf("unexpected tool %q", tool.Name)
			continue
		}
		if tool.Class != w.class || tool.Hidden != w.hidden || tool.Status != approval.StatusApproved || !tool.Present || tool.ServerQuarantined ||
			tool.ApprovedBy != "baseline" || tool.ApprovedAt.IsZero() {
			t.Errorf("%s: class %q hidden %v status %q present %v by %q at %v; want class %q hidden %v, approved by baseline",
				tool.Name, tool.Class, tool.Hidden, tool.Status, tool.Present, tool.ApprovedBy, tool.ApprovedAt, w.class, w.hidden)
		}
		if !strings.HasPrefix(tool.CurrentHash, "sha256:") || tool.ApprovedHash != tool.CurrentHash || len(tool.Current) == 0 {
			t.Errorf("%s: approved %q current %q definition %s; want equal sha256: hashes and the definition", tool.Name, tool.ApprovedHash, tool.CurrentHash, tool.Current)
		}
		if def, _ := fx.Tool(tool.Name); !strings.Contains(string(tool.Current), def.Description) {
			t.Errorf("%s: current definition %s lacks the upstream's description %q", tool.Name, tool.Current, def.Description)
		}
	}

	// A quarantined server's tools are shown too, pending, without an
	// approved hash.
	var qTools []Tool
	rec = e.do("GET", "/v1/servers/q/tools", "")
	decodeInto(t, rec, &qTools)
	if len(qTools) != 4 {
		t.Fatalf("GET /v1/servers/q/tools: %d %s", rec.Code, rec.Body)
	}
	for _, tool := range qTools {
		if tool.Status != approval.StatusPending || tool.ApprovedHash != "" || tool.CurrentHash == "" {
			t.Errorf("q's %s: status %q approved %q current %q; want pending, not approved", tool.Name, tool.Status, tool.ApprovedHash, tool.CurrentHash)
		}
		if !tool.ServerQuarantined {
			t.Errorf("q's %s does not say its server is quarantined", tool.Name)
		}
	}

	// A disabled server has no tools yet: an empty list, not null.
	rec = e.do("GET", "/v1/servers/off/tools", "")
	if rec.Code != http.StatusOK || strings.TrimSpace(rec.Body.String()) != "[]" {
		t.Errorf("GET /v1/servers/off/tools: %d %s; want 200 []", rec.Code, rec.Body)
	}
}

// A name not in the config is refused the same way on every route that
// takes one, naming the configured servers and how to add one.
func TestUnknownServer(t *testing.T) {
	e, _, _ := standardEnv(t)
	routes := []struct{ method, path, body string }{
		{"GET", "/v1/servers/nosuch", ""},
		{"GET", "/v1/servers/nosuch/tools", ""},
		{"POST", "/v1/servers/nosuch/approve", `{}`},
		{"POST", "/v1/servers/nosuch/quarantine", ""},
		{"POST", "/v1/servers/nosuch/tools/approve", `{"all": true}`},
		{"POST", "/v1/servers/nosuch/tools/block", `{"tools": ["x"]}`},
		{"POST", "/v1/servers/nosuch/call", `{"tool": "echo"}`},
		{"GET", "/v1/servers/nosuch/logs", ""},
		{"DELETE", "/v1/writes/nosuch", ""},
		{"GET", "/v1/activity?server=nosuch", ""},
		{"GET", "/v1/servers/nosuch/auth", ""},
		{"POST", "/v1/servers/nosuch/auth/login", ""},
		{"DELETE", "/v1/servers/nosuch/auth", ""},
	}
	for _, rt := range routes {
		t.Run(rt.method+" "+rt.path, func(t *testing.T) {
			expectError(t, e.do(rt.method, rt.path, rt.body), refusal{http.StatusNotFound, "unknown_server",
				[]string{`"nosuch"`, "[bad fx off q]", "warden servers add"}})
		})
	}
}

// Quarantining a server hides its tools at once and answers the server;
// approving admits it again.
func TestQuarantine(t *testing.T) {
	e, _, _ := standardEnv(t)
	var s Server
	rec := e.do("POST", "/v1/servers/fx/quarantine", "")
	decodeInto(t, rec, &s)
	if rec.Code != http.StatusOK || s.Name != "fx" || !s.Quarantined || s.ToolTokens != 0 {
		t.Fatalf("POST /v1/servers/fx/quarantine: %d %+v; want fx quarantined, no visible tools", rec.Code, s)
	}
	if !e.Approvals.Quarantined("fx") {
		t.Fatal("the answer says quarantined, the registry does not")
	}
	var ans approval.Answer
	rec = e.do("POST", "/v1/servers/fx/approve", `{}`)
	decodeInto(t, rec, &ans)
	if rec.Code != http.StatusOK || e.Approvals.Quarantined("fx") || ans.StillPending != 0 {
		t.Fatalf("POST /v1/servers/fx/approve after quarantine: %d %+v", rec.Code, ans)
	}
}

// No answer about servers shows a configured secret.
func TestServerAnswersHoldNoSecret(t *testing.T) {
	e, _, _ := standardEnv(t)
	for _, path := range []string{"/v1/status", "/v1/servers", "/v1/servers/fx", "/v1/servers/fx/tools", "/v1/sessions"} {
		rec := e.do("GET", path, "")
		if rec.Code != http.StatusOK {
			t.Errorf("GET %s: %d %s", path, rec.Code, rec.Body)
		}
		if strings.Contains(rec.Body.String(), upstreamSecret) {
			t.Errorf("GET %s shows the upstream's secret header: %s", path, rec.Body)
		}
	}
}

// GET /v1/sessions shows a streamable HTTP upstream's persisted session by
// a prefix of its id, never the id or the server's headers.
func TestSessions(t *testing.T) {
	up := fixture.NewServer(fixture.Options{ProtocolVersions: []string{"2025-11-25"}})
	e := newEnv(t, fmt.Sprintf(`{"s": {"url": %q, "trusted": true, "headers": {"X-Key": %q}}}`, up.Serve(t), upstreamSecret))
	e.WaitListed(t, "s")
	var list []sessions.Info
	rec := e.do("GET", "/v1/sessions", "")
	decodeInto(t, rec, &list)
	ids := up.HTTP().SessionIDs()
	if rec.Code != http.StatusOK || len(list) != 1 || len(ids) != 1 {
		t.Fatalf("GET /v1/sessions: %d %s (upstream sessions %v)", rec.Code, rec.Body, ids)
	}
	s := list[0]
	if s.Server != "s" || s.ProtocolVersion != "2025-11-25" || s.Mode != "fresh" || !strings.HasPrefix(ids[0], strings.TrimSuffix(s.SessionPrefix, "…")) {
		t.Errorf("session %+v for upstream session %q", s, ids[0])
	}
	if body := rec.Body.String(); strings.Contains(body, ids[0]) || strings.Contains(body, upstreamSecret) {
		t.Errorf("GET /v1/sessions shows the session id or a header: %s", body)
	}
}
