// Package client is a small typed client for Warden's operator REST API
// (/v1/...), as served by "warden serve". The warden CLI uses it; scripts in
// Go can too.
//
// A client made by New sends the operator token over TCP; one made by
// NewLocal reaches the daemon on its state dir's socket and sends none. An
// answer with an error status is an *APIError carrying the API's code and
// message; a daemon that cannot be reached is a *ConnError whose message
// says to start it.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/activity"
	"github.com/wardenmcp/warden/api"
	"github.com/wardenmcp/warden/approval"
	"github.com/wardenmcp/warden/decisions"
	"github.com/wardenmcp/warden/internal/state"
	"github.com/wardenmcp/warden/writes"
)

// maxAnswer bounds how much of an answer is read.
const maxAnswer = 64 << 20

// Client talks to one Warden daemon. It is safe for concurrent use.
type Client struct {
	base  string // the requests' base URL
	where string // the daemon's address, as messages name it
	token string // "" on the socket
	// HTTPClient sends the requests. New sets one that never uses a proxy:
	// the daemon is local and the token must not go anywhere else.
	HTTPClient *http.Client
	// Timeout bounds the wait for an answer (0: no bound), so that a stuck
	// daemon, or another program on its address, does not hang a script.
	// A tool call is bounded by its server's callTimeout instead.
	Timeout time.Duration
}

// DefaultTimeout is the Timeout New sets.
const DefaultTimeout = 30 * time.Second

// New returns a client for the daemon at baseURL (such as
// "http://127.0.0.1:7373") that authenticates with the operator token.
func New(baseURL, token string) *Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil
	base := strings.TrimRight(baseURL, "/")
	return &Client{base: base, where: base, token: token, HTTPClient: &http.Client{Transport: tr}, Timeout: DefaultTimeout}
}

// NewLocal returns a client for the daemon of stateDir, on the state dir's
// socket (state.Dial): it reaches that daemon or none, and sends no token,
// since the daemon knows the operator by the socket. It is how the warden
// CLI talks to the daemon: nothing another process could have written
// decides where it goes.
func NewLocal(stateDir string) *Client {
	tr := &http.Transport{
		DialContext:         func(ctx context.Context, _, _ string) (net.Conn, error) { return state.Dial(ctx, stateDir) },
		MaxIdleConnsPerHost: 4, IdleConnTimeout: 30 * time.Second,
	}
	return &Client{base: "http://localhost", where: filepath.Join(stateDir, state.SocketFile),
		HTTPClient: &http.Client{Transport: tr}, Timeout: DefaultTimeout}
}

// APIError is an error answer of the API: {"error":{"code","message"}}.
type APIError struct {
	Status  int             // HTTP status
	Code    string          // such as "unknown_server", "hash_mismatch", "unauthorized"
	Message string          // what went wrong and how to fix it
	Details json.RawMessage // optional, code-specific (hash_mismatch: the mismatches)
}

func (e *APIError) Error() string {
	if e.Message != "" {
		return e.Message
	}
	return fmt.Sprintf("warden answered %d %s (%s)", e.Status, http.StatusText(e.Status), e.Code)
}

// Mismatches returns the tools whose definitions differ from the review, for
// a hash_mismatch error (409); nil otherwise.
func (e *APIError) Mismatches() []approval.Mismatch {
	if e.Code != "hash_mismatch" || len(e.Details) == 0 {
		return nil
	}
	var d struct {
		Mismatches []approval.Mismatch `json:"Mismatches"`
	}
	if json.Unmarshal(e.Details, &d) != nil {
		return nil
	}
	return d.Mismatches
}

// ConnError means the daemon could not be reached at all.
type ConnError struct {
	URL string
	Err error
}

func (e *ConnError) Error() string {
	if errors.Is(e.Err, syscall.ECONNREFUSED) || errors.Is(e.Err, state.ErrNoDaemon) {
		return fmt.Sprintf("cannot reach warden at %s (is the daemon running?)", e.URL)
	}
	return fmt.Sprintf("cannot reach warden at %s: %v", e.URL, e.Err)
}

func (e *ConnError) Unwrap() error { return e.Err }

// Status answers GET /v1/status.
func (c *Client) Status(ctx context.Context) (*api.Status, error) {
	var out api.Status
	return &out, c.do(ctx, http.MethodGet, "/v1/status", nil, &out)
}

// Servers answers GET /v1/servers.
func (c *Client) Servers(ctx context.Context) ([]api.Server, error) {
	var out []api.Server
	return out, c.do(ctx, http.MethodGet, "/v1/servers", nil, &out)
}

// Server answers GET /v1/servers/{s}.
func (c *Client) Server(ctx context.Context, server string) (*api.Server, error) {
	var out api.Server
	return &out, c.do(ctx, http.MethodGet, serverPath(server, ""), nil, &out)
}

// Tools answers GET /v1/servers/{s}/tools: every tool record with its
// status, hashes and the current and approved definitions.
func (c *Client) Tools(ctx context.Context, server string) ([]api.Tool, error) {
	var out []api.Tool
	return out, c.do(ctx, http.MethodGet, serverPath(server, "/tools"), nil, &out)
}

// ToolStates is Tools without the definitions (?definitions=false): names,
// statuses and hashes, for deciding without reading every schema.
func (c *Client) ToolStates(ctx context.Context, server string) ([]api.Tool, error) {
	var out []api.Tool
	return out, c.do(ctx, http.MethodGet, serverPath(server, "/tools?definitions=false"), nil, &out)
}

// ApproveServer admits a quarantined server (POST /v1/servers/{s}/approve).
// A non-nil ExpectedHashes is sent even when empty (approve no tool); nil
// approves whatever is pending when the daemon handles the request.
func (c *Client) ApproveServer(ctx context.Context, server string, req approval.ServerApproval) (*approval.Answer, error) {
	body := map[string]any{}
	if req.ExpectedHashes != nil {
		body["expected_hashes"] = req.ExpectedHashes
	}
	if len(req.Block) > 0 {
		body["block"] = req.Block
	}
	var out approval.Answer
	return &out, c.do(ctx, http.MethodPost, serverPath(server, "/approve"), body, &out)
}

// Quarantine quarantines a server again (POST /v1/servers/{s}/quarantine)
// and returns its state after.
func (c *Client) Quarantine(ctx context.Context, server string) (*api.Server, error) {
	var out api.Server
	return &out, c.do(ctx, http.MethodPost, serverPath(server, "/quarantine"), struct{}{}, &out)
}

// ApproveTools approves tools (POST /v1/servers/{s}/tools/approve). As with
// ApproveServer, a non-nil ExpectedHashes is sent even when empty.
func (c *Client) ApproveTools(ctx context.Context, server string, req approval.ToolApproval) (*approval.Answer, error) {
	body := map[string]any{}
	if len(req.Tools) > 0 {
		body["tools"] = req.Tools
	}
	if req.All {
		body["all"] = true
	}
	if len(req.Except) > 0 {
		body["except"] = req.Except
	}
	if req.ExpectedHashes != nil {
		body["expected_hashes"] = req.ExpectedHashes
	}
	if req.Force {
		body["force"] = true
	}
	var out approval.Answer
	return &out, c.do(ctx, http.MethodPost, serverPath(server, "/tools/approve"), body, &out)
}

// BlockTools blocks tools (POST /v1/servers/{s}/tools/block).
func (c *Client) BlockTools(ctx context.Context, server string, tools []string) (*approval.Answer, error) {
	var out approval.Answer
	body := map[string]any{"tools": tools}
	return &out, c.do(ctx, http.MethodPost, serverPath(server, "/tools/block"), body, &out)
}

// Call runs a tool through the gateway's policy (POST /v1/servers/{s}/call).
// A policy refusal is a result with IsError and Meta["warden/refusal"], not
// an error; see Refusal. args may be nil.
func (c *Client) Call(ctx context.Context, server, tool string, args json.RawMessage) (*mcp.CallToolResult, error) {
	var out mcp.CallToolResult
	req := api.CallRequest{Tool: tool, Arguments: args}
	return &out, c.exchange(ctx, 0, http.MethodPost, serverPath(server, "/call"), req, &out)
}

// Refusal returns the refusal code of a call result ("TOOL_PENDING",
// "WRITES_LATCHED"...), or "" when the result is not a policy refusal.
func Refusal(res *mcp.CallToolResult) string {
	if res == nil || res.Meta == nil {
		return ""
	}
	switch r := res.Meta["warden/refusal"].(type) {
	case map[string]any:
		code, _ := r["code"].(string)
		return code
	case map[string]string:
		return r["code"]
	}
	return ""
}

// Writes answers GET /v1/writes: the latched servers.
func (c *Client) Writes(ctx context.Context) ([]writes.Latch, error) {
	var out []writes.Latch
	return out, c.do(ctx, http.MethodGet, "/v1/writes", nil, &out)
}

// Cleared answers ClearWrites; its JSON is that of api.Cleared.
type Cleared struct {
	Cleared bool           `json:"cleared"`
	Latch   *writes.Latch  `json:"latch,omitempty"`
	Latches []writes.Latch `json:"latches,omitempty"`
}

// ClearWrites clears a server's write latch (DELETE /v1/writes/{s}).
func (c *Client) ClearWrites(ctx context.Context, server string) (*Cleared, error) {
	var out Cleared
	return &out, c.do(ctx, http.MethodDelete, "/v1/writes/"+url.PathEscape(server), nil, &out)
}

// UILogin asks for a one-time login code for the review page (POST
// /v1/ui/login).
func (c *Client) UILogin(ctx context.Context) (*api.UILogin, error) {
	var out api.UILogin
	return &out, c.do(ctx, http.MethodPost, "/v1/ui/login", nil, &out)
}

// Sessions answers GET /v1/sessions, as the daemon wrote it.
func (c *Client) Sessions(ctx context.Context) (json.RawMessage, error) {
	var out json.RawMessage
	return out, c.do(ctx, http.MethodGet, "/v1/sessions", nil, &out)
}

// Activity answers GET /v1/activity: recent tool calls that f picks, at
// most limit when limit > 0 (else the daemon's default).
func (c *Client) Activity(ctx context.Context, f activity.Filter, limit int) ([]activity.Entry, error) {
	q := url.Values{}
	if f.Server != "" {
		q.Set("server", f.Server)
	}
	if f.User != "" {
		q.Set("user", f.User)
	}
	var out []activity.Entry
	return out, c.do(ctx, http.MethodGet, listPath("/v1/activity", q, limit), nil, &out)
}

// Decisions lists operators' decisions, newest first (GET /v1/decisions):
// only server's when set; limit 0 takes the daemon's default.
func (c *Client) Decisions(ctx context.Context, server string, limit int) ([]decisions.Decision, error) {
	q := url.Values{}
	if server != "" {
		q.Set("server", server)
	}
	var out []decisions.Decision
	return out, c.do(ctx, http.MethodGet, listPath("/v1/decisions", q, limit), nil, &out)
}

// listPath is a list route's path with its query and limit (0: the
// daemon's default).
func listPath(p string, q url.Values, limit int) string {
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if len(q) > 0 {
		p += "?" + q.Encode()
	}
	return p
}

// Logs writes a stdio server's stderr log to w (GET
// /v1/servers/{s}/logs): its last lines (all when lines is 0), then with
// follow what the server writes next, until ctx is done (which is no
// error) or the daemon stops.
func (c *Client) Logs(ctx context.Context, server string, lines int, follow bool, w io.Writer) error {
	q := url.Values{"lines": {strconv.Itoa(lines)}}
	limit := c.Timeout
	if follow {
		q.Set("follow", "1")
		limit = 0
	}
	p := serverPath(server, "/logs") + "?" + q.Encode()
	resp, cancel, err := c.send(ctx, limit, http.MethodGet, p, nil)
	if err != nil {
		return err
	}
	defer cancel()
	defer resp.Body.Close()
	if _, err := io.Copy(w, resp.Body); err != nil && ctx.Err() == nil {
		return fmt.Errorf("warden at %s: reading %s: %w", c.where, p, err)
	}
	return nil
}

func serverPath(server, rest string) string {
	return "/v1/servers/" + url.PathEscape(server) + rest
}

// do sends one request and decodes a 2xx answer into out.
func (c *Client) do(ctx context.Context, method, path string, body, out any) error {
	return c.exchange(ctx, c.Timeout, method, path, body, out)
}

// exchange sends one request and decodes its answer into out, waiting at
// most limit (0: no bound) for it.
func (c *Client) exchange(ctx context.Context, limit time.Duration, method, path string, body, out any) error {
	resp, cancel, err := c.send(ctx, limit, method, path, body)
	if err != nil {
		return err
	}
	defer cancel()
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return fmt.Errorf("warden at %s: reading the answer to %s %s: %w", c.where, method, path, err)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("warden at %s: the answer to %s %s is not what this CLI expects (%v); is the daemon the same version as the CLI?", c.where, method, path, err)
	}
	return nil
}

// connErr makes a failure to dial the daemon a *ConnError; other errors
// are returned as they are.
func connErr(base string, err error) error {
	var op *net.OpError
	if (errors.As(err, &op) && op.Op == "dial") || errors.Is(err, state.ErrNoDaemon) {
		return &ConnError{URL: base, Err: err}
	}
	return err
}

// send sends one request and returns a 2xx answer, whose body is read
// within limit (0: no bound) until cancel is called; another status is an
// *APIError.
func (c *Client) send(ctx context.Context, limit time.Duration, method, path string, body any) (*http.Response, context.CancelFunc, error) {
	caller := ctx
	cancel := context.CancelFunc(func() {})
	if limit > 0 {
		ctx, cancel = context.WithTimeout(ctx, limit)
	}
	resp, err := c.request(caller, ctx, limit, method, path, body)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	if resp.StatusCode >= 300 {
		defer cancel()
		defer resp.Body.Close()
		data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
		if err != nil {
			return nil, nil, fmt.Errorf("warden at %s: reading the answer to %s %s: %w", c.where, method, path, err)
		}
		return nil, nil, apiError(resp.StatusCode, data)
	}
	return resp, cancel, nil
}

func (c *Client) request(caller, ctx context.Context, limit time.Duration, method, path string, body any) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("encoding the request to %s: %w", path, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, fmt.Errorf("warden at %s: %w", c.where, err)
	}
	c.authorize(req)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.HTTPClient.Do(req)
	if err == nil {
		return resp, nil
	}
	if caller.Err() == nil && ctx.Err() != nil {
		return nil, fmt.Errorf("no answer from warden at %s within %s: the daemon may be stuck, or another program listens at that address (see the daemon's log, or what listens there)", c.where, limit)
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return nil, ctxErr
	}
	if ce := connErr(c.where, err); ce != err {
		return nil, ce
	}
	return nil, fmt.Errorf("warden at %s: %s %s: %w", c.where, method, path, err)
}

// Where is the daemon's address as the client reaches it: the base URL
// given to New, or NewLocal's socket.
func (c *Client) Where() string { return c.where }

// authorize sends the operator token, where the client has one.
func (c *Client) authorize(req *http.Request) {
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
}

func apiError(status int, data []byte) *APIError {
	var e struct {
		Error struct {
			Code    string          `json:"code"`
			Message string          `json:"message"`
			Details json.RawMessage `json:"details"`
		} `json:"error"`
	}
	if json.Unmarshal(data, &e) == nil && e.Error.Code != "" {
		return &APIError{Status: status, Code: e.Error.Code, Message: e.Error.Message, Details: e.Error.Details}
	}
	text := strings.TrimSpace(string(data))
	if len(text) > 200 {
		text = text[:200] + "..."
	}
	msg := fmt.Sprintf("warden answered %d %s", status, http.StatusText(status))
	if text != "" {
		msg += ": " + text
	}
	return &APIError{Status: status, Code: "http_" + strconv.Itoa(status), Message: msg}
}
