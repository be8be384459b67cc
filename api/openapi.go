package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/activity"
	"github.com/wardenmcp/warden/approval"
	"github.com/wardenmcp/warden/config"
	"github.com/wardenmcp/warden/decisions"
	"github.com/wardenmcp/warden/instances"
	"github.com/wardenmcp/warden/oauth"
	"github.com/wardenmcp/warden/sessions"
	"github.com/wardenmcp/warden/writes"
)

// route is one operation of the API. Handler registers exactly these, and
// the OpenAPI document (GET /v1/openapi.json) is built from them, so no
// route is served undocumented.
type route struct {
	method, path string
	id, summary  string
	query        []param
	body         any    // the request body's type (a zero value); nil for none
	answer       any    // the JSON answer's type; nil when media says
	media        string // a streamed answer's content type
	public       bool   // served without the token
	// role is what an operator needs for the route; "": admin. A reviewer
	// reads, approves and blocks.
	role  config.Role
	serve func(*handler, http.ResponseWriter, *http.Request)
}

// needs is the role the route needs.
func (rt route) needs() config.Role {
	if rt.role == "" {
		return config.RoleAdmin
	}
	return rt.role
}

type param struct{ name, typ, doc string }

// BlockRequest is the body of POST /v1/servers/{s}/tools/block.
type BlockRequest struct {
	Tools []string `json:"tools"`
}

// reviewer marks the routes a reviewer may use: reading, approving and
// blocking. The rest (quarantine, clearing latches, calling tools, logging
// in to upstreams, minting review-page codes) need an admin.
const reviewer = config.RoleReviewer

var routes = []route{
	{method: "GET", path: "/v1/openapi.json", id: "openapi", public: true, answer: map[string]any{},
		summary: "This document: every route of the API (OpenAPI 3.1). No token needed: it describes the API, never the state.",
		serve:   (*handler).openapi},
	{method: "GET", path: "/v1/status", id: "status", role: reviewer, answer: Status{},
		summary: "Version, uptime, config path, the last refused reload, and each server's state", serve: (*handler).status},
	{method: "GET", path: "/v1/servers", id: "listServers", role: reviewer, answer: []Server{},
		summary: "Each configured server: transport, trust, quarantine, connection state (with a failed start's last stderr lines), tool counts by status",
		serve:   (*handler).servers},
	{method: "GET", path: "/v1/servers/{s}", id: "getServer", role: reviewer, answer: Server{}, summary: "One server, as in the list", serve: (*handler).server},
	{method: "POST", path: "/v1/servers/{s}/approve", id: "approveServer", role: reviewer, body: approval.ServerApproval{}, answer: approval.Answer{},
		summary: "Admit a quarantined server, approving its pending tools but those in block (without expected_hashes, not those with a high-severity finding: the answer's flagged names them). With expected_hashes, any tool whose definition differs answers 409 and nothing is written",
		serve:   (*handler).approveServer},
	{method: "POST", path: "/v1/servers/{s}/quarantine", id: "quarantineServer", answer: Server{},
		summary: "Quarantine a server again: none of its tools are listed or run", serve: (*handler).quarantine},
	{method: "GET", path: "/v1/servers/{s}/tools", id: "listTools", role: reviewer, answer: []Tool{},
		query: []param{
			{"definitions", "boolean", "false leaves out the current and approved definitions: what deciding on hashes needs, in a fraction of the bytes (default true)"},
		},
		summary: "Each tool of a server: class, status, approved and current hash and definition, the guardrails scanner's findings, and why a flagged tool is held (reason)", serve: (*handler).tools},
	{method: "POST", path: "/v1/servers/{s}/tools/approve", id: "approveTools", role: reviewer, body: approval.ToolApproval{}, answer: approval.Answer{},
		summary: "Approve tools: the named ones, or all (but except, and but those with a high-severity finding unless force; the answer's flagged names those left). With expected_hashes, any mismatch answers 409 and nothing is written",
		serve:   (*handler).approveTools},
	{method: "POST", path: "/v1/servers/{s}/tools/block", id: "blockTools", role: reviewer, body: BlockRequest{}, answer: approval.Answer{},
		summary: "Block tools: they are neither listed nor run", serve: (*handler).block},
	{method: "GET", path: "/v1/servers/{s}/logs", id: "serverLog", role: reviewer, media: "text/plain",
		query: []param{
			{"lines", "integer", "how many of the last lines to answer first; 0 for the whole current file (default 100)"},
			{"follow", "boolean", "then keep answering what the server writes, until the client goes away"},
		},
		summary: "A stdio server's stderr log, its configured secrets masked", serve: (*handler).logs},
	{method: "POST", path: "/v1/servers/{s}/call", id: "callTool", body: CallRequest{}, answer: mcp.CallToolResult{},
		summary: "Call a tool through the same policy as agents (warden call). A refusal is a result with isError and _meta[\"warden/refusal\"].code",
		serve:   (*handler).call},
	{method: "GET", path: "/v1/writes", id: "listLatches", role: reviewer, answer: []writes.Latch{},
		summary: "Each call of unknown outcome that latched its server: what finds it upstream (tool, when sent and latched, surface, client and session, the arguments' hash, names and sizes; values only where the tool's config says recordArgs)", serve: (*handler).writes},
	{method: "DELETE", path: "/v1/writes/{s}", id: "clearLatch", answer: Cleared{},
		summary: "Clear a server's write latch; answers what was cleared", serve: (*handler).clearWrites},
	{method: "GET", path: "/v1/instances", id: "listInstances", role: reviewer, answer: []instances.Instance{},
		summary: "The instances sharing this store: id, run, listen address, version, started, last_seen, and gone once unseen for 30 s (one that died)", serve: (*handler).instances},
	{method: "GET", path: "/v1/sessions", id: "listSessions", role: reviewer, answer: []sessions.Info{},
		summary: "Persisted upstream HTTP sessions (never credentials)", serve: (*handler).sessions},
	{method: "GET", path: "/v1/activity", id: "listActivity", role: reviewer, answer: []activity.Entry{},
		query: []param{
			{"server", "string", "only this server's calls"},
			{"user", "string", "only calls by this caller (a user, or a client of the config's \"clients\")"},
			{"limit", "integer", "at most this many, newest first (default 100)"},
		},
		summary: "Recent tool calls: surface, server, tool, class, SHA-256 of the arguments (never the arguments), outcome",
		serve:   (*handler).activity},
	{method: "GET", path: "/v1/decisions", id: "listDecisions", role: reviewer, answer: []decisions.Decision{},
		query: []param{
			{"server", "string", "only decisions about this server"},
			{"limit", "integer", "at most this many, newest first (default 100)"},
		},
		summary: "Operators' decisions: who (\"local\" for the CLI and the api-token), on which instance, when, and what: admit, approve, block, quarantine, clear (with the tools approved and blocked, the latches cleared)",
		serve:   (*handler).decisions},
	{method: "POST", path: "/v1/servers/{s}/auth/login", id: "authLogin", answer: oauth.LoginStarted{},
		summary: "Start an upstream OAuth login: answers the authorization_url a person opens; Warden's /oauth/callback completes it",
		serve:   (*handler).authLogin},
	{method: "GET", path: "/v1/servers/{s}/auth", id: "authStatus", role: reviewer, answer: oauth.Info{},
		summary: "An HTTP server's upstream authorization state (never a token)", serve: (*handler).authStatus},
	{method: "DELETE", path: "/v1/servers/{s}/auth", id: "authLogout", answer: AuthLogout{},
		summary: "Log out of an upstream: revoke its tokens where the authorization server supports it, and forget them",
		serve:   (*handler).authLogout},
	{method: "POST", path: "/v1/ui/login", id: "uiLogin", answer: UILogin{},
		summary: "A one-time code for the review page in the browser (warden ui): GET the answered path once to start a browser session",
		serve:   (*handler).uiLogin},
	{method: "GET", path: "/v1/events", id: "events", role: reviewer, media: "text/event-stream",
		summary: "Server-sent events: server state, approvals, latches, list changes, sessions, reloads", serve: (*handler).events},
}

func (a *handler) openapi(w http.ResponseWriter, r *http.Request) {
	doc, err := a.doc()
	if err != nil { // a type the schema cannot describe; TestOpenAPI catches it
		fail(w, http.StatusInternalServerError, "openapi_error", "describing the routes: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(doc)
}

// pathParam is a path's {name}.
var pathParam = regexp.MustCompile(`\{([a-z]+)\}`)

// schemaOptions describe what reflection cannot tell.
var schemaOptions = &jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
	reflect.TypeFor[json.RawMessage](): {Description: "any JSON value"},
	reflect.TypeFor[time.Time]():       {Type: "string", Format: "date-time"},
	reflect.TypeFor[mcp.CallToolResult](): {Type: "object", Description: "an MCP CallToolResult (content, structuredContent, isError, _meta), " +
		"as the tool answered it or as Warden refused the call"},
}}

// document builds the OpenAPI 3.1 document of the routes.
func document(version string) ([]byte, error) {
	errSchema, err := jsonschema.For[Error](schemaOptions)
	if err != nil {
		return nil, err
	}
	paths := map[string]map[string]any{}
	for _, rt := range routes {
		op := map[string]any{"operationId": rt.id, "summary": rt.summary}
		var params []any
		for _, m := range pathParam.FindAllStringSubmatch(rt.path, -1) {
			params = append(params, map[string]any{"name": m[1], "in": "path", "required": true,
				"description": "a server's name, as in the config", "schema": map[string]any{"type": "string"}})
		}
		for _, q := range rt.query {
			params = append(params, map[string]any{"name": q.name, "in": "query", "description": q.doc, "schema": map[string]any{"type": q.typ}})
		}
		if len(params) > 0 {
			op["parameters"] = params
		}
		if rt.body != nil {
			s, err := jsonschema.ForType(reflect.TypeOf(rt.body), schemaOptions)
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", rt.method, rt.path, err)
			}
			op["requestBody"] = map[string]any{"required": true, "content": map[string]any{"application/json": map[string]any{"schema": s}}}
		}
		ok := map[string]any{"description": "done"}
		switch {
		case rt.media != "":
			ok["content"] = map[string]any{rt.media: map[string]any{"schema": map[string]any{"type": "string"}}}
		default:
			s, err := jsonschema.ForType(reflect.TypeOf(rt.answer), schemaOptions)
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", rt.method, rt.path, err)
			}
			ok["content"] = map[string]any{"application/json": map[string]any{"schema": s}}
		}
		op["responses"] = map[string]any{
			"200":     ok,
			"default": map[string]any{"description": "an error: what was wrong and how to fix it", "content": map[string]any{"application/json": map[string]any{"schema": map[string]any{"$ref": "#/components/schemas/Error"}}}},
		}
		if rt.public {
			op["security"] = []any{}
		}
		if paths[rt.path] == nil {
			paths[rt.path] = map[string]any{}
		}
		paths[rt.path][strings.ToLower(rt.method)] = op
	}
	doc := map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{"title": "Warden operator API", "version": version,
			"description": "The operator REST API of a Warden daemon: server and tool status, approvals, write latches, sessions, activity, logs and events. " +
				"Every route but this document needs the operator token (the file api-token in Warden's state dir), and is refused to processes Warden started."},
		"paths":    paths,
		"security": []any{map[string]any{"token": []any{}}},
		"components": map[string]any{
			"securitySchemes": map[string]any{"token": map[string]any{"type": "http", "scheme": "bearer",
				"description": "the contents of the file api-token in Warden's state dir"}},
			"schemas": map[string]any{"Error": errSchema},
		},
	}
	return json.MarshalIndent(doc, "", "  ")
}
