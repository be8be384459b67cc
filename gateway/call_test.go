package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/approval"
	"github.com/wardenmcp/warden/gateway"
	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/writes"
)

// An approved tool runs upstream; its answer comes back as the upstream
// gave it, and the activity log records the call.
func TestCallRunsAnApprovedTool(t *testing.T) {
	fx := fixture.NewServer(fixture.Options{})
	p := start(t, fmt.Sprintf(`{"fx": {"url": %q, "trusted": true}}`, fx.Serve(t)))
	p.WaitListed(t, "fx")

	res, err := call(t, p, "fx", fixture.ToolEcho, `{"said":"hello"}`, nil)
	if err != nil || res.IsError || text(res) != `{"said":"hello"}` {
		t.Fatalf("echo: %+v %q (%v)", res, text(res), err)
	}
	e := lastActivity(t, p, "fx")
	if e.Tool != fixture.ToolEcho || e.Outcome != "ok" || e.Class != "read" || e.Surface != "mcp" || e.Code != "" || len(e.ArgsSHA256) != 64 {
		t.Errorf("activity %+v; want an ok read of echo from mcp with its arguments' hash", e)
	}

	// No arguments, and null, go upstream as {}.
	for _, args := range []string{"", "null"} {
		if res, err := call(t, p, "fx", fixture.ToolEcho, args, nil); err != nil || text(res) != "{}" {
			t.Errorf("echo with arguments %q: %q (%v), want {}", args, text(res), err)
		}
	}

	// A write runs once and is not left as a call in doubt.
	res, err = call(t, p, "fx", fixture.ToolWrite, `{"key":"k","value":"v"}`, nil)
	if err != nil || res.IsError || fx.Value("k") != "v" || fx.WriteDispatches() != 1 {
		t.Fatalf("write: %q (%v), stored %q after %d dispatches", text(res), err, fx.Value("k"), fx.WriteDispatches())
	}
	if e := lastActivity(t, p, "fx"); e.Class != "write" || e.Outcome != "ok" {
		t.Errorf("activity of the write %+v", e)
	}
	if l := p.Writes.List(); len(l) != 0 {
		t.Errorf("a write with a known outcome left latches %+v", l)
	}

	// A tool's own isError answer is an error outcome, not a refusal.
	res, err = call(t, p, "fx", fixture.ToolWrite, `{"value":"v","fail":true}`, nil)
	if err != nil || !res.IsError || refusalCode(res) != "" {
		t.Fatalf("a failing write: %+v (%v)", res, err)
	}
	if e := lastActivity(t, p, "fx"); e.Outcome != "error" {
		t.Errorf("activity of a failed write %+v, want outcome error", e)
	}
}

// Each policy refusal has its code and says what to do; nothing reaches
// the upstream.
func TestCallRefusals(t *testing.T) {
	fx, q := fixture.NewServer(fixture.Options{}), fixture.NewServer(fixture.Options{})
	p := start(t, fmt.Sprintf(`{
		"fx": {"url": %q, "trusted": true, "tools": {"echo": {"hidden": true}}},
		"q": {"url": %q},
		"off": {"url": "http://127.0.0.1:1/mcp", "disabled": true}
	}`, fx.Serve(t), q.Serve(t)))
	p.WaitListed(t, "fx")
	p.WaitListed(t, "q")

	expectRefusal(t, p, "q", fixture.ToolWrite, `{"value":"x"}`, nil, gateway.CodeQuarantined, "warden servers approve q")
	expectRefusal(t, p, "off", "anything", "", nil, gateway.CodeUnavailable, `"off" is disabled`, gateway.DisabledHelp)
	expectRefusal(t, p, "nosuch", "anything", "", nil, gateway.CodeUnavailable, `"nosuch" is not configured`, "warden servers list")
	if e := lastActivity(t, p, "q"); e.Outcome != "refused" || e.Code != string(gateway.CodeQuarantined) {
		t.Errorf("activity of a quarantined call %+v", e)
	}

	// Hidden and unknown tools are not tools the agent may call.
	expectUnknownTool(t, p, "fx", fixture.ToolEcho)
	expectUnknownTool(t, p, "fx", "nosuch")
	_, err := call(t, p, "fx", "nosuch", "", nil)
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams || !strings.Contains(werr.Message, `unknown tool "nosuch" on server "fx"`) {
		t.Errorf("an unknown tool is answered %v, want an invalid-params JSON-RPC error", err)
	}

	// Blocked by an operator.
	if _, err := p.Approvals.Block("fx", []string{fixture.ToolRead}, "test"); err != nil {
		t.Fatal(err)
	}
	expectRefusal(t, p, "fx", fixture.ToolRead, "", nil, gateway.CodeBlocked, "warden review approve fx read_value")

	// Changed since it was approved: held.
	if err := fx.SetDescription(fixture.ToolWrite, "Store a value, and something else."); err != nil {
		t.Fatal(err)
	}
	waitTool(t, p, "fx", fixture.ToolWrite, func(x gateway.Tool) bool { return x.Status == approval.StatusChanged })
	expectRefusal(t, p, "fx", fixture.ToolWrite, `{"value":"x"}`, nil, gateway.CodeChanged, "warden review fx", "warden review approve fx write_value")

	// New after the baseline: pending.
	fx.AddTool(&mcp.Tool{Name: "fresh", InputSchema: map[string]any{"type": "object"}, Annotations: fixture.ClassAnnotations("read")})
	waitTool(t, p, "fx", "fresh", func(x gateway.Tool) bool { return x.Status == approval.StatusPending && !x.Visible })
	expectRefusal(t, p, "fx", "fresh", "", nil, gateway.CodePending, "warden review approve fx fresh")

	if n := fx.WriteDispatches() + fx.Calls(fixture.ToolRead) + fx.Calls("fresh") + q.WriteDispatches(); n != 0 {
		t.Errorf("refused calls reached the upstreams %d times", n)
	}

	// Approved by a person, the changed tool runs again.
	if _, err := p.Approvals.ApproveTools("fx", approval.ToolApproval{Tools: []string{fixture.ToolWrite}}); err != nil {
		t.Fatal(err)
	}
	if res, err := call(t, p, "fx", fixture.ToolWrite, `{"value":"x"}`, nil); err != nil || res.IsError {
		t.Errorf("the approved write: %q (%v)", text(res), err)
	}
}

// A write whose outcome is unknown latches the server: later writes (and
// destructive calls) are refused without reaching it, reads still run, and
// clearing the latch lets writes through again. A read in doubt latches
// nothing.
func TestUnknownOutcomeLatchesWrites(t *testing.T) {
	fx := fixture.NewServer(fixture.Options{})
	p := start(t, fmt.Sprintf(`{"w": {"url": %q, "trusted": true, "callTimeout": "1s"}}`, fx.Serve(t)))
	p.WaitListed(t, "w")

	res, err := call(t, p, "w", fixture.ToolRead, `{"sleep_ms": 5000}`, nil)
	if err != nil || !res.IsError || res.Meta["warden/outcome"] != "unknown" || !strings.Contains(text(res), "(timeout)") ||
		strings.Contains(text(res), "Further writes") {
		t.Fatalf("a read that timed out: %+v %q (%v)", res, text(res), err)
	}
	if l := p.Writes.List(); len(l) != 0 {
		t.Fatalf("a read in doubt latched %+v", l)
	}

	res, err = call(t, p, "w", fixture.ToolWrite, `{"value":"slow","sleep_ms": 5000}`, nil)
	if err != nil || !res.IsError || res.Meta["warden/outcome"] != "unknown" || !strings.Contains(text(res), "warden writes clear w") {
		t.Fatalf("a write that timed out: %+v %q (%v)", res, text(res), err)
	}
	if e := lastActivity(t, p, "w"); e.Outcome != "unknown" || e.Class != "write" {
		t.Errorf("activity of the write in doubt %+v", e)
	}
	latches := p.Writes.List()
	if len(latches) != 1 || latches[0].Tool != fixture.ToolWrite || latches[0].Reason != writes.ReasonTimeout || latches[0].Surface != "mcp" || len(latches[0].ArgsSHA256) != 64 {
		t.Fatalf("latches %+v; want one for the write, reason timeout", latches)
	}

	expectRefusal(t, p, "w", fixture.ToolWrite, `{"value":"again"}`, nil, gateway.CodeLatched, "warden writes clear w", "(timeout)")
	expectRefusal(t, p, "w", fixture.ToolDelete, "", nil, gateway.CodeLatched)
	if fx.WriteDispatches() != 1 || fx.Deletes() != 0 {
		t.Errorf("latched writes reached the upstream: %d writes, %d deletes", fx.WriteDispatches(), fx.Deletes())
	}
	if res, err := call(t, p, "w", fixture.ToolRead, "", nil); err != nil || res.IsError {
		t.Errorf("a read while latched: %q (%v)", text(res), err)
	}

	if _, err := p.Writes.Clear("w", "test"); err != nil {
		t.Fatal(err)
	}
	if res, err := call(t, p, "w", fixture.ToolWrite, `{"value":"after"}`, nil); err != nil || res.IsError || fx.Value("") != "after" {
		t.Errorf("a write after the latch was cleared: %q (%v)", text(res), err)
	}
}

// A write whose caller goes away once it was sent is in doubt too, for
// the reason "cancelled".
func TestCancelledWriteLatches(t *testing.T) {
	fx := fixture.NewServer(fixture.Options{})
	p := start(t, fmt.Sprintf(`{"w": {"url": %q, "trusted": true}}`, fx.Serve(t)))
	p.WaitListed(t, "w")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		wctx, wcancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer wcancel()
		if fx.WaitWriteDispatches(wctx, 1) == nil {
			cancel()
		}
	}()
	res, err := p.Gateway.CallTool(ctx, gateway.Call{Server: "w", Tool: fixture.ToolWrite, Args: []byte(`{"value":"v","sleep_ms":20000}`), Surface: "mcp"})
	if err != nil {
		t.Fatal(err)
	}
	r := decoded(t, res)
	if r.Meta["warden/outcome"] != "unknown" || !strings.Contains(text(r), "(cancelled)") {
		t.Fatalf("a cancelled write: %+v %q", r, text(r))
	}
	if l := p.Writes.List(); len(l) != 1 || l[0].Reason != writes.ReasonCancelled {
		t.Fatalf("latches %+v; want one, reason cancelled", l)
	}
}

// An upstream that cannot be reached takes no call: the refusal says it
// is safe to retry, and nothing is latched.
func TestUnreachableUpstream(t *testing.T) {
	gone := httptest.NewServer(nil)
	url := gone.URL + "/mcp"
	gone.Close()
	p := start(t, fmt.Sprintf(`{"down": {"url": %q, "trusted": true, "callTimeout": "2s"}}`, url))
	expectRefusal(t, p, "down", fixture.ToolWrite, `{"value":"v"}`, nil, gateway.CodeUnavailable, "safe to retry", "warden status")
	if l := p.Writes.List(); len(l) != 0 {
		t.Errorf("a call that was never sent latched %+v", l)
	}
}

// Once the gateway is stopping, calls are refused, saying so.
func TestCallWhileStopping(t *testing.T) {
	fx := fixture.NewServer(fixture.Options{})
	p := start(t, fmt.Sprintf(`{"fx": {"url": %q, "trusted": true}}`, fx.Serve(t)))
	p.WaitListed(t, "fx")
	p.Gateway.Close()
	expectRefusal(t, p, "fx", fixture.ToolEcho, "", nil, gateway.CodeUnavailable, "Warden is stopping")
	if fx.Calls(fixture.ToolEcho) != 0 {
		t.Error("a call after Close reached the upstream")
	}
}

// Close lets a call in flight finish and answers it.
func TestCloseWaitsForCallsInFlight(t *testing.T) {
	fx := fixture.NewServer(fixture.Options{})
	p := start(t, fmt.Sprintf(`{"fx": {"url": %q, "trusted": true}}`, fx.Serve(t)))
	p.WaitListed(t, "fx")
	type answer struct {
		text string
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := call(t, p, "fx", fixture.ToolWrite, `{"value":"v","sleep_ms":300}`, nil)
		if err != nil {
			done <- answer{err: err}
			return
		}
		done <- answer{text: text(res)}
	}()
	ctx := testCtx(t)
	if err := fx.WaitWriteDispatches(ctx, 1); err != nil {
		t.Fatal(err)
	}
	p.Gateway.Close()
	if a := <-done; a.err != nil || a.text != "stored" {
		t.Fatalf("the call in flight during Close: %q (%v), want it answered", a.text, a.err)
	}
	if fx.WritesApplied() != 1 || len(p.Writes.List()) != 0 {
		t.Errorf("%d writes applied, latches %+v", fx.WritesApplied(), p.Writes.List())
	}
}

// A destructive call to a server with confirmDestructive runs only after
// an explicit yes from the person behind the client; anything else refuses
// it before it is sent. Other calls are not asked about.
func TestConfirmDestructive(t *testing.T) {
	fx := fixture.NewServer(fixture.Options{})
	p := start(t, fmt.Sprintf(`{"d": {"url": %q, "trusted": true, "confirmDestructive": true}}`, fx.Serve(t)))
	p.WaitListed(t, "d")
	elicits := &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}}
	answering := func(r *mcp.ElicitResult, err error) *client {
		return &client{caps: elicits, elicit: func(*mcp.ElicitParams) (*mcp.ElicitResult, error) { return r, err }}
	}

	expectRefusal(t, p, "d", fixture.ToolDelete, "", nil, gateway.CodeDeclined, "not an MCP client", "confirmDestructive")
	expectRefusal(t, p, "d", fixture.ToolDelete, "", &client{caps: &mcp.ClientCapabilities{}}, gateway.CodeDeclined, "does not support elicitation")
	expectRefusal(t, p, "d", fixture.ToolDelete, "", &client{}, gateway.CodeDeclined, "does not support elicitation")
	expectRefusal(t, p, "d", fixture.ToolDelete, "", answering(nil, errors.New("the person closed the window")), gateway.CodeDeclined, "no answer: the person closed the window")
	expectRefusal(t, p, "d", fixture.ToolDelete, "", answering(&mcp.ElicitResult{Action: "decline"}, nil), gateway.CodeDeclined, "chose decline")
	expectRefusal(t, p, "d", fixture.ToolDelete, "", answering(&mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": false}}, nil), gateway.CodeDeclined, "did not tick")
	if fx.Deletes() != 0 {
		t.Fatalf("an unconfirmed destructive call reached the upstream %d times", fx.Deletes())
	}

	yes := answering(&mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}, nil)
	long := strings.Repeat("x", 500)
	res, err := call(t, p, "d", fixture.ToolDelete, `{"key":"`+long+`"}`, yes)
	if err != nil || res.IsError || fx.Deletes() != 1 {
		t.Fatalf("a confirmed delete: %q (%v), %d deletes", text(res), err, fx.Deletes())
	}
	msg := yes.asked[0].Message
	if !strings.Contains(msg, `"delete_value"`) || !strings.Contains(msg, `"d"`) || !strings.HasSuffix(msg, "…") || len(msg) > 600 {
		t.Errorf("the confirmation asked %q; want the tool, the server and the arguments shortened", msg)
	}
	if s, _ := yes.asked[0].RequestedSchema.(map[string]any); s["type"] != "object" {
		t.Errorf("requested schema %v", yes.asked[0].RequestedSchema)
	}

	// A plain write needs no confirmation.
	if res, err := call(t, p, "d", fixture.ToolWrite, `{"value":"v"}`, yes); err != nil || res.IsError || yes.askedCount() != 1 {
		t.Errorf("a write on a confirmDestructive server: %q (%v), asked %d times", text(res), err, yes.askedCount())
	}
}
