package api

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/wardenmcp/warden/approval"
	"github.com/wardenmcp/warden/callers"
	"github.com/wardenmcp/warden/config"
	"github.com/wardenmcp/warden/decisions"
	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/internal/testing/idp"
)

// operatorEnv is the API of a Warden whose operators log in with a real
// identity provider: rita a reviewer by her group, adam an admin by name,
// eve known to the provider but to no entry of "operators", each with a
// token for the API; agent a token of rita's for the MCP endpoints. Server
// q is quarantined with its tools pending.
func operatorEnv(t *testing.T) (*env, *idp.Provider) {
	t.Helper()
	prov := idp.Start(t)
	const mcpAud, apiAud = "https://warden.test/mcp", "https://warden.test/v1"
	for _, a := range []idp.Agent{
		{ID: "rita", Secret: "r", Audience: apiAud, Groups: []string{"eng", "security"}},
		{ID: "adam", Secret: "a", Audience: apiAud},
		{ID: "eve", Secret: "e", Audience: apiAud, Groups: []string{"eng"}},
		{ID: "outsider", Secret: "o", Audience: "https://elsewhere.test", Groups: []string{"security"}},
		{ID: "agent", Secret: "g", Audience: mcpAud, Groups: []string{"security"}},
	} {
		prov.Add(a)
	}
	policy := callers.New(&config.Config{PublicURL: "https://warden.test",
		Auth:      &config.Auth{Issuer: prov.Issuer, Audience: mcpAud, OperatorAudience: apiAud, UserClaim: "sub", GroupsClaim: "groups"},
		Operators: []config.Operator{{Group: "security", Role: config.RoleReviewer}, {User: "adam", Role: config.RoleAdmin}}})
	q := fixture.NewServer(fixture.Options{})
	e := newEnv(t, fmt.Sprintf(`{"q": {"url": %q}}`, q.Serve(t)), func(d *Deps) {
		d.Callers = func() *callers.Policy { return policy }
	})
	e.WaitListed(t, "q")
	return e, prov
}

// A reviewer reads, approves and blocks under their own name; what needs
// an admin is refused them, naming the role and the config entry that
// gives it; an admin does it, and the record names them.
func TestOperatorRoles(t *testing.T) {
	e, prov := operatorEnv(t)
	rita := "Bearer " + prov.Token(t, "rita")
	as := func(who, method, path, body string, status int) *httptest.ResponseRecorder {
		t.Helper()
		rec := e.doAs(method, path, body, who)
		if rec.Code != status {
			t.Fatalf("%s %s: %d %s; want %d", method, path, rec.Code, rec.Body, status)
		}
		return rec
	}
	for _, path := range []string{"/v1/status", "/v1/servers/q/tools", "/v1/writes", "/v1/activity"} {
		as(rita, "GET", path, "", http.StatusOK)
	}
	as(rita, "POST", "/v1/servers/q/approve", `{"block": ["delete_value"]}`, http.StatusOK)
	var s Server
	decodeInto(t, as(rita, "GET", "/v1/servers/q", "", http.StatusOK), &s)
	if s.Quarantined || s.DecidedBy != "rita" {
		t.Fatalf("q after rita admitted it: %+v; want admitted, decided by rita", s)
	}
	var tools []Tool
	decodeInto(t, as(rita, "GET", "/v1/servers/q/tools", "", http.StatusOK), &tools)
	for _, tool := range tools {
		if tool.DecidedBy != "rita" {
			t.Errorf("tool %s (%s) after rita's admission: decided by %q", tool.Name, tool.Status, tool.DecidedBy)
		}
	}
	for _, r := range []struct{ method, path, body string }{
		{"POST", "/v1/servers/q/quarantine", ""},
		{"DELETE", "/v1/writes/q", ""},
		{"POST", "/v1/servers/q/call", `{"tool": "read_value"}`},
		{"POST", "/v1/ui/login", ""}, // a session as the local operator, an admin
		{"POST", "/v1/servers/q/auth/login", ""},
	} {
		expectError(t, as(rita, r.method, r.path, r.body, http.StatusForbidden), refusal{http.StatusForbidden, "forbidden_role",
			[]string{`operator "rita" (reviewer)`, "the admin role", `{"user": "rita", "role": "admin"}`}})
	}
	if e.Approvals.Quarantined("q") {
		t.Fatal("a reviewer's refused quarantine quarantined q")
	}

	adam := "Bearer " + prov.Token(t, "adam")
	as(adam, "POST", "/v1/servers/q/quarantine", "", http.StatusOK)
	if st, _ := e.Approvals.Server("q"); !st.Quarantined || st.DecidedBy != "adam" {
		t.Fatalf("q after adam quarantined it: %+v", st)
	}
	as(adam, "POST", "/v1/servers/q/tools/block", `{"tools": ["read_value"]}`, http.StatusOK)
	as("Bearer "+testToken, "POST", "/v1/servers/q/tools/approve", `{"tools": ["delete_value"]}`, http.StatusOK)
	decodeInto(t, as(adam, "GET", "/v1/servers/q/tools", "", http.StatusOK), &tools)
	by := map[string]string{}
	for _, tool := range tools {
		by[tool.Name] = tool.DecidedBy
	}
	if by[fixture.ToolRead] != "adam" || by[fixture.ToolDelete] != callers.Local.Name || by[fixture.ToolWrite] != "rita" {
		t.Errorf("decided by %v; want read_value adam, delete_value the local operator, write_value rita", by)
	}
	// The log of decisions says who did what, newest first; refused
	// requests decided nothing.
	var log []decisions.Decision
	decodeInto(t, as(rita, "GET", "/v1/decisions?server=q", "", http.StatusOK), &log)
	var got []string
	for _, d := range log {
		got = append(got, fmt.Sprintf("%s %s %v %v", d.Operator, d.Action, d.Approved, d.Blocked))
	}
	want := []string{"local approve [delete_value] []", "adam block [] [read_value]", "adam quarantine [] []",
		"rita admit [echo read_value write_value] [delete_value]"}
	if !slices.Equal(got, want) {
		t.Errorf("decisions:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A token that is no operator's is refused, saying why: a person not in
// "operators" (403), a token for another audience (the MCP endpoints' too:
// an agent's token never decides), or none Warden knows (401).
func TestNotOperators(t *testing.T) {
	e, prov := operatorEnv(t)
	expectError(t, e.doAs("POST", "/v1/servers/q/approve", "{}", "Bearer "+prov.Token(t, "agent")),
		refusal{http.StatusUnauthorized, "unauthorized", []string{`"https://warden.test/v1"`}})
	if !e.Approvals.Quarantined("q") {
		t.Fatal("an agent's token for the MCP endpoints admitted q")
	}
	expectError(t, e.doAs("GET", "/v1/status", "", "Bearer "+prov.Token(t, "eve")),
		refusal{http.StatusForbidden, "not_operator", []string{`"operators"`, `{"user": "<name>", "role": "reviewer"}`}})
	expectError(t, e.doAs("GET", "/v1/status", "", "Bearer "+prov.Token(t, "outsider")),
		refusal{http.StatusUnauthorized, "unauthorized", []string{"audience", "api-token"}})
	expectError(t, e.doAs("GET", "/v1/status", "", "Bearer not-a-token"),
		refusal{http.StatusUnauthorized, "unauthorized", []string{"api-token"}})
	if rec := e.doAs("GET", "/v1/status", "", ""); rec.Code != http.StatusUnauthorized {
		t.Errorf("no token: %d", rec.Code)
	}
}

// The review page calls the API in the process as the person logged in:
// their role holds and their name is on the decision, whatever token (none
// here) the request holds.
func TestAsOperator(t *testing.T) {
	e, _ := operatorEnv(t)
	reviewer := callers.Operator{Name: "rita", Role: config.RoleReviewer}
	do := func(method, path, body string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		e.h.ServeHTTP(rec, AsOperator(httptest.NewRequest(method, path, strings.NewReader(body)), reviewer))
		return rec
	}
	if rec := do("POST", "/v1/servers/q/tools/approve", `{"tools": ["read_value"]}`); rec.Code != http.StatusOK {
		t.Fatalf("approve as rita: %d %s", rec.Code, rec.Body)
	}
	recs := e.Approvals.Tools("q")
	if i := slices.IndexFunc(recs, func(r approval.ToolRecord) bool { return r.Name == fixture.ToolRead }); recs[i].DecidedBy != "rita" {
		t.Errorf("read_value approved in the process as rita: decided by %q", recs[i].DecidedBy)
	}
	expectError(t, do("POST", "/v1/servers/q/quarantine", ""), refusal{http.StatusForbidden, "forbidden_role", []string{"rita"}})
}
