package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/activity"
	"github.com/wardenmcp/warden/answer"
	"github.com/wardenmcp/warden/approval"
	"github.com/wardenmcp/warden/callers"
	"github.com/wardenmcp/warden/guardrails"
	"github.com/wardenmcp/warden/internal/canon"
	"github.com/wardenmcp/warden/upstream"
	"github.com/wardenmcp/warden/writes"
)

// Call is one tools/call as a surface hands it to the gateway.
type Call struct {
	Server, Tool string
	Args         json.RawMessage
	Meta         mcp.Meta
	// Surface is the endpoint the call came on: "mcp", "mcp/{server}",
	// "mcp?view=search", each behind "stdio:" when through warden stdio;
	// "cli" for an operator's call.
	Surface string
	Client  Client        // the calling client; nil for operator calls
	Caller  writes.Caller // who the client says it is, kept in a latch
	// Who is the caller its token names, and what its profiles allow (the
	// zero value, for an operator's call or without known callers: all).
	Who callers.Caller
	// PerRequest: the client says what it can answer with each request
	// (the 2026-07-28 revision), not once for its session.
	PerRequest bool
	// Answers are what a stateless-era client answered before it was
	// asked, with a new call; a stateless-era upstream reads them.
	Answers mcp.InputResponseMap
	// After, if set, takes the work left once the answer is read, for the
	// caller to do after it sent the answer on (see answer.After).
	After *answer.After
	// Start, if set, makes the call a task: it is called once the call is
	// admitted (quarantine, approval, profile, latch), and creates the task
	// there; a destructive call's confirmation is then asked of the client
	// through it (its first question), before anything goes upstream. An
	// error refuses the call as it is; nothing is sent.
	Start func(context.Context) error
}

// CallTool runs call through policy and, if allowed, upstream. A policy
// refusal, an unknown outcome and an unreachable upstream are answered as
// tool results with isError; the upstream's own JSON-RPC errors are returned
// as errors, unchanged.
func (g *Gateway) CallTool(ctx context.Context, call Call) (*answer.Result, error) {
	ctx, leave, ok := g.gate.enter(ctx)
	if !ok {
		return answer.Decoded(refuse(CodeUnavailable, "Warden is stopping; nothing was sent. Retry once it is back (warden serve).").Result()), nil
	}
	defer leave()

	start := time.Now()
	entry := activity.Entry{At: start, Surface: call.Surface, Server: call.Server, Tool: call.Tool, User: call.Who.Name(), Task: call.Start != nil}
	res, err := g.callTool(ctx, call, &entry)
	entry.LatencyMicros = time.Since(start).Microseconds()
	var ref *Refusal
	switch {
	case errors.As(err, &ref):
		entry.Outcome, entry.Code, entry.Error = "refused", string(ref.Code), ref.Text
		res, err = answer.Decoded(ref.Result()), nil
	case entry.Outcome == "unknown":
		entry.Error = errorText(res, nil)
	case err != nil || (res != nil && res.IsError):
		entry.Outcome, entry.Error = "error", errorText(res, err)
	default:
		entry.Outcome = "ok"
	}
	g.deps.Activity.Add(entry)
	g.deps.Metrics.ObserveCall(call.Server, entry.Class, entry.Outcome, time.Since(start))
	return res, err
}

// errorText is what a failed call said, for its activity entry (which
// masks credentials in it): the JSON-RPC error, else the error result's
// text, at most activity.MaxErrorRead bytes.
func errorText(res *answer.Result, err error) string {
	switch {
	case err != nil:
		s := err.Error()
		return s[:min(len(s), activity.MaxErrorRead)]
	case res != nil:
		r, derr := res.Tool()
		if derr != nil {
			return "the result could not be read: " + derr.Error()
		}
		return answer.Text(r.Content, activity.MaxErrorRead)
	}
	return ""
}

func (g *Gateway) callTool(ctx context.Context, call Call, entry *activity.Entry) (*answer.Result, error) {
	c, err := g.conns.live(call.Server)
	if err != nil {
		return nil, err
	}
	if g.inv.get(call.Server) == nil || c.Config().OnDemand && !c.Running() {
		// Just started, or an on-demand server to start: learn the tools
		// before judging the call (a definition changed meanwhile is held).
		if err := c.Ready(ctx); err != nil {
			return nil, unavailable(call.Server, err)
		}
	}
	tool, err := g.admitTool(c, call)
	if err != nil {
		return nil, err
	}
	entry.Class = string(tool.Class)
	entry.Args = call.Args // hashed by the activity writer, off the call path
	if len(entry.Args) == 0 {
		entry.Args = json.RawMessage("{}")
	}
	if !c.Config().Guardrails.AllowSecrets {
		if found := guardrails.FindSecrets(call.Args); found != nil {
			return nil, argumentsBlocked(call, found)
		}
	}
	if tool.Class != writes.ClassRead {
		// Refuse early, even while the server is down; the admission gate
		// below is what makes the check race-free.
		if l, latched := g.deps.Writes.Check(call.Server); latched {
			return nil, latchedRefusal(&l)
		}
	}
	if call.Start != nil {
		if err := call.Start(ctx); err != nil {
			return nil, err
		}
	}
	if tool.Class == writes.ClassDestructive && c.Config().ConfirmDestructive {
		if err := g.confirm(ctx, call); err != nil {
			return nil, err
		}
	}

	f := &inflight{server: call.Server, client: call.Client, ctx: ctx, token: call.Meta["progressToken"], perRequest: call.PerRequest}
	upToken, done := g.router.add(f)
	defer done()
	f.up.Params, f.up.After, f.up.Task = toolParams(call, upToken), call.After, call.Start != nil
	var w *writeAdmission // a non-read call's
	if tool.Class != writes.ClassRead {
		w = &writeAdmission{ctx: ctx, ledger: g.deps.Writes, call: call, entry: entry, recordArgs: c.Config().Tools[call.Tool].RecordArgs}
		f.up.Admit = w.admit
	}
	defer func() {
		if r := recover(); r != nil {
			panic(r) // the intent stays: the server latches at the next start
		}
		w.end() // the outcome is known, or latched
	}()
	res, err := c.Call(ctx, &f.up)
	if err == nil {
		return res, nil
	}
	var ref *Refusal
	if errors.As(err, &ref) {
		return nil, err
	}
	if a := upstream.Answer(err); a != nil {
		return nil, a // as the upstream said it, code and data
	}
	if errors.Is(err, upstream.ErrAuthRequired) {
		// Refused by the upstream for want of a token: nothing ran there.
		return nil, unavailable(call.Server, err)
	}
	if !f.up.Sent() || errors.Is(err, mcp.ErrSessionMissing) {
		// Nothing left Warden, or the upstream answered that it does not
		// know the session (404): nothing happened upstream.
		return nil, unavailable(call.Server, err)
	}
	entry.Outcome = "unknown"
	return g.unknownOutcome(ctx, call, entry, w, err), nil
}

// toolParams is call as it goes upstream, with the progress token minted
// for it ("" when the client asked for none).
func toolParams(call Call, upToken string) *mcp.CallToolParams {
	meta := call.Meta
	if upToken != "" {
		meta = cloneMeta(call.Meta)
		meta["progressToken"] = upToken
	}
	params := &mcp.CallToolParams{Meta: meta, Name: call.Tool, Arguments: call.Args, InputResponses: call.Answers}
	if len(call.Args) == 0 || string(call.Args) == "null" {
		// No arguments go upstream as {} on every path, as the SDK client
		// sends them: servers validate "arguments" as an object.
		params.Arguments = json.RawMessage("{}")
	}
	return params
}

// admitTool applies quarantine and approval, and finds the tool's class.
func (g *Gateway) admitTool(c *upstream.Conn, call Call) (Tool, error) {
	if err := g.permit(c, call); err != nil {
		return Tool{}, err
	}
	if g.deps.Approvals.Quarantined(call.Server) {
		return Tool{}, refuse(CodeQuarantined, "Server %q is quarantined: none of its tools run until an operator reviews and approves it. Review with: warden review %s; approve with: warden servers approve %s", call.Server, call.Server, call.Server)
	}
	// The status of the definition this instance would run: the records
	// may have approved another (see approval's Check).
	var def *mcp.Tool
	inv, pins := g.inv.pinned(call.Server)
	if inv != nil {
		def = inv.Tool(call.Tool)
	}
	st, known := g.deps.Approvals.Check(call.Server, call.Tool, pins[call.Tool])
	o := c.Config().Tools[call.Tool]
	switch {
	case !known || def == nil || o.Hidden:
		return Tool{}, &UnknownToolError{Server: call.Server, Tool: call.Tool}
	case st == approval.StatusPending:
		return Tool{}, refuse(CodePending, "Tool %q of server %q is new and not approved yet. Review it with: warden review %s; approve it with: warden review approve %s %s", call.Tool, call.Server, call.Server, call.Server, call.Tool)
	case st == approval.StatusChanged && g.deps.Approvals.ApprovedOther(call.Server, call.Tool, pins[call.Tool]):
		// The records approved the definition another listing had (another
		// instance's, or one since): list again, so that they hold this
		// one, changed, for review.
		g.relist(call.Server, c)
		return Tool{}, refuse(CodeChanged, "Tool %q of server %q is approved with another definition than this Warden instance was given (the server answers instances differently, or changed meanwhile); it is held here, and the server is being listed again so that its records show the difference. See it with: warden review %s; approve the new definition with: warden review approve %s %s", call.Tool, call.Server, call.Server, call.Server, call.Tool)
	case st == approval.StatusChanged:
		return Tool{}, refuse(CodeChanged, "Tool %q of server %q changed since it was approved and is held until a person looks again. See what changed with: warden review %s; approve the new definition with: warden review approve %s %s", call.Tool, call.Server, call.Server, call.Server, call.Tool)
	case st == approval.StatusBlocked:
		return Tool{}, refuse(CodeBlocked, "Tool %q of server %q is blocked by an operator. To allow it again: warden review approve %s %s", call.Tool, call.Server, call.Server, call.Tool)
	case st != approval.StatusApproved:
		// Invalid (a name outside the MCP character set): never listed, so
		// no tool an agent may know of; and any status not known here fails
		// closed.
		return Tool{}, &UnknownToolError{Server: call.Server, Tool: call.Tool}
	}
	return Tool{Tool: def, Status: st, Class: writes.Classify(o.Class, def.Annotations), Visible: true}, nil
}

// permit refuses a call outside what its caller's profiles allow, before
// anything else is said of the tool: a caller learns nothing of the tools
// it may not use.
func (g *Gateway) permit(c *upstream.Conn, call Call) error {
	p := call.Who.Profile
	if p == nil {
		return nil
	}
	var class writes.Class // a tool not known: judged without one
	if inv := g.inv.get(call.Server); inv != nil {
		if def := inv.Tool(call.Tool); def != nil {
			class = writes.Classify(c.Config().Tools[call.Tool].Class, def.Annotations)
		}
	}
	if p.Allows(call.Server, call.Tool, class) {
		return nil
	}
	return refuse(CodeNotPermitted, "Tool %q of server %q is outside what %s may use (%s). "+callers.Help,
		call.Tool, call.Server, call.Who, p)
}

// UnknownToolError: the call names no tool of the server an agent may call
// (none by that name, or hidden). Nothing was sent. On the wire it is an
// invalid-params JSON-RPC error.
type UnknownToolError struct{ Server, Tool string }

func (e *UnknownToolError) Error() string {
	return fmt.Sprintf("unknown tool %q on server %q", e.Tool, e.Server)
}

// Unwrap gives the JSON-RPC error to answer with.
func (e *UnknownToolError) Unwrap() error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: e.Error()}
}

func unavailable(server string, err error) *Refusal {
	if errors.Is(err, upstream.ErrAuthRequired) {
		return refuse(CodeAuth, "Server %q needs a person to authorize Warden (OAuth), so nothing was sent. Ask the person to run: warden auth login %s", server, server)
	}
	// The cause goes last: it may quote the server's stderr, line by line.
	return refuse(CodeUnavailable, "Server %q could not take the call. Nothing was sent; it is safe to retry. Check the server with: warden status. The cause: %v", server, err)
}

// argumentsBlocked refuses a call whose arguments carry credentials: it
// names where and in which format, never the value.
func argumentsBlocked(call Call, found []guardrails.SecretFinding) *Refusal {
	var where []string
	for _, f := range found {
		where = append(where, fmt.Sprintf("%s (%s)", f.Path, f.Rule))
	}
	return refuse(CodeArgumentsBlocked, "The arguments of the call to %q on server %q carry what looks like a credential, so nothing was sent: %s. Keep secrets out of tool calls (a server should read its own from its config). If server %q is meant to receive them, an operator allows it in Warden's config file, in the server's entry under \"mcpServers\": \"guardrails\": {\"secrets\": \"allow\"} (applied when the file is saved).",
		call.Tool, call.Server, strings.Join(where, ", "), call.Server)
}

// storeUnavailable refuses a non-read call whose admission could not reach
// the store: whether the server is latched is unknown.
func storeUnavailable() *Refusal {
	return refuse(CodeStoreUnavailable, "Warden could not reach its store, so it cannot tell whether writes to this server are latched; nothing was sent. To fix it, %s.", StoreHelp)
}

func latchedRefusal(l *writes.Latch) *Refusal {
	return refuse(CodeLatched, "Writes to server %q are latched: a call to %q at %s had an unknown outcome (%s), so it may or may not have happened. See every call in doubt with: warden writes; check the server's state, then clear the latch with: warden writes clear %s",
		l.Server, l.Tool, l.At.UTC().Format(time.RFC3339), l.Reason, l.Server)
}

// unknownOutcome handles a call that was sent but not answered: a non-read
// call (w) latches the server, each such call once, and its intent goes
// with the latch's commit.
func (g *Gateway) unknownOutcome(ctx context.Context, call Call, entry *activity.Entry, w *writeAdmission, err error) *answer.Result {
	reason := writes.ReasonUpstreamLost
	var tooLarge *upstream.AnswerTooLargeError
	switch {
	case errors.As(err, &tooLarge):
		reason = writes.ReasonAnswerTooLarge
	case errors.Is(err, upstream.ErrTimeout):
		reason = writes.ReasonTimeout
	case ctx.Err() != nil:
		reason = writes.ReasonCancelled
	}
	text := fmt.Sprintf("The call to %q on server %q was sent but its outcome is unknown (%s): %v.", call.Tool, call.Server, reason, err)
	if entry.ArgsSHA256 == "" {
		entry.ArgsSHA256 = canon.ArgsSHA256(call.Args)
	}
	if w != nil {
		if rerr := w.latch(reason); rerr != nil {
			g.log.Error("recording write latch failed", "server", call.Server, "err", rerr)
		}
		text += fmt.Sprintf(" Further writes to %q are refused until an operator checks whether it happened and runs: warden writes clear %s", call.Server, call.Server)
	}
	return answer.Decoded(&mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}},
		Meta: mcp.Meta{"warden/outcome": "unknown"}})
}

func cloneMeta(m mcp.Meta) mcp.Meta {
	out := make(mcp.Meta, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	return out
}
