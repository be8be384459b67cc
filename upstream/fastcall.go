package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/answer"
	"github.com/wardenmcp/warden/config"
	"github.com/wardenmcp/warden/question"
)

// The direct tools/call path for streamable-HTTP upstreams. A tool call is
// the hot path of a gateway, and the SDK client's general machinery costs
// about as much as the upstream's own work; this path posts the request on
// the live session itself and reads the answer (JSON, or an event stream
// carrying notifications and server-to-client requests before it). The
// session, its initialization and everything else stay with the SDK client.

// direct is the direct tools/call path of one streamable-HTTP upstream.
type direct struct {
	name    string
	cfg     *atomic.Pointer[config.Server] // the connection's: its URL
	http    *sessionTransport
	client  *mcp.Implementation // Warden's client info
	peer    Peer
	notices *noticeGate
	ask     *asker
	refresh func() // a listing pass, when the upstream says a list changed
}

var fastID atomic.Uint64

// fastIDPrefix makes the ids unique across Warden processes: a session
// resumed after a restart may still have the previous process's calls in
// flight upstream, and reusing one of their ids gets the call rejected.
var fastIDPrefix = "w" + strconv.FormatUint(rand.Uint64(), 36) + "-"

// rpcMessage is any JSON-RPC message, decoded just enough to dispatch it.
type rpcMessage struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *jsonrpc.Error  `json:"error,omitempty"`
}

// callToolHTTP runs call, with params, over the session's HTTP transport.
func (d *direct) callToolHTTP(ctx context.Context, cs *mcp.ClientSession, call *Call, params *mcp.CallToolParams) (res *answer.Result, asks bool, err error) {
	id := fastIDPrefix + strconv.FormatUint(fastID.Add(1), 36)
	if stateless(cs) {
		params = d.withClient(params, cs)
	}
	body, err := callRequest(id, params)
	if err != nil {
		return nil, false, err
	}
	// When the call is abandoned, the upstream is told (once, and only if
	// the request reached it), also while waiting for the response
	// headers: an upstream may send them only with the answer.
	var told sync.Once
	tell := func() {
		if call.Sent() {
			told.Do(func() { d.cancelUpstream(cs, id, context.Cause(ctx)) })
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, false, err // abandoned already: nothing is sent
	}
	// The exchange outlives the call by the end of the answer's stream,
	// read once the answer is on its way (see answer.After); abandoning the
	// call before that ends the exchange.
	reqCtx, endExchange := context.WithCancel(context.WithoutCancel(ctx))
	unlink := context.AfterFunc(ctx, func() { endExchange(); tell() })
	resp, err := d.post(reqCtx, cs, body, "tools/call", params.Name)
	if ctx.Err() != nil {
		tell() // abandoned while the request went out: it may have arrived
	}
	if err != nil {
		unlink()
		endExchange()
		return nil, false, err
	}
	defer func() {
		if unlink() {
			call.after(func() { release(resp.Body); endExchange() })
		} else {
			resp.Body.Close()
			endExchange()
		}
	}()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		if stateless(cs) { // without sessions, an unknown method's answer
			if refusal := rpcRefusal(resp); refusal != nil {
				return nil, false, refusal
			}
		}
		// Else the upstream ended the session, or is gone: this call was
		// not processed, and the connection starts over.
		go cs.Close()
		return nil, false, fmt.Errorf("tools/call: %w", mcp.ErrSessionMissing)
	case resp.StatusCode >= 400 && resp.StatusCode < 500:
		// Refused (bad request, credentials, rate limit): not processed, so
		// an answer, not an unknown outcome.
		return nil, false, refusedByHTTP(resp)
	case resp.StatusCode != http.StatusOK:
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, false, fmt.Errorf("tools/call: upstream answered %s: %s", resp.Status, strings.TrimSpace(string(msg)))
	}
	var reply *rpcMessage
	ans := &answerReader{r: resp.Body, ctx: ctx, h: call.hold, size: resp.ContentLength}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		ans.size = -1 // the events before the answer are not counted
		reply, err = d.readResumable(ctx, cs, resp, ans, id)
	} else {
		var data []byte
		if data, err = readAnswer(ans); err == nil {
			reply, err = decodeMessage(data)
		}
	}
	var tooLarge *AnswerTooLargeError
	if errors.As(err, &tooLarge) {
		return nil, false, tooLarge
	}
	// A result that made it is kept even if the call was abandoned just
	// then; an error answer after Warden asked the upstream to cancel is
	// the cancellation's echo, and the outcome stays unknown.
	if ctx.Err() != nil && (reply == nil || reply.Error != nil) {
		return nil, false, ctx.Err()
	}
	if reply == nil && err != nil {
		return nil, false, fmt.Errorf("tools/call: reading the answer: %w", err)
	}
	if reply == nil {
		return nil, false, fmt.Errorf("tools/call: %w: the upstream closed the stream without answering", ErrLost)
	}
	if reply.Error != nil {
		return nil, false, reply.Error
	}
	if res, asks, err = rawResult(reply.Result); err != nil {
		return nil, false, fmt.Errorf("tools/call: bad result: %w", err)
	}
	ans.h.shrinkTo(int64(cap(reply.Result))) // read whole: its size is known now
	return res, asks, nil
}

// readAnswer reads a JSON answer whole, in one buffer of its length when
// the upstream said it (room for which is taken first).
func readAnswer(r *answerReader) ([]byte, error) {
	if r.size < 0 {
		return io.ReadAll(r)
	}
	if r.size > answerFree {
		if err := r.h.reserve(r.ctx, r.size); err != nil {
			return nil, err
		}
	}
	data := make([]byte, r.size)
	_, err := io.ReadFull(r, data)
	return data, err
}

// callRequest writes the tools/call request. The arguments, when they are
// the caller's JSON (already checked when the caller's request was read),
// are copied in as they are rather than encoded again.
func callRequest(id string, params *mcp.CallToolParams) ([]byte, error) {
	args, ok := params.Arguments.(json.RawMessage)
	if !ok || len(args) == 0 || params.InputResponses != nil || params.RequestState != "" {
		return json.Marshal(struct {
			JSONRPC string              `json:"jsonrpc"`
			ID      string              `json:"id"`
			Method  string              `json:"method"`
			Params  *mcp.CallToolParams `json:"params"`
		}{"2.0", id, "tools/call", params})
	}
	name, err := json.Marshal(params.Name)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, 96+len(id)+len(name)+len(args))
	b = append(b, `{"jsonrpc":"2.0","id":"`...)
	b = append(b, id...) // letters, digits and '-' only
	b = append(b, `","method":"tools/call","params":{"name":`...)
	b = append(b, name...)
	b = append(b, `,"arguments":`...)
	b = append(b, args...)
	if len(params.Meta) > 0 {
		meta, err := json.Marshal(params.Meta)
		if err != nil {
			return nil, err
		}
		b = append(b, `,"_meta":`...)
		b = append(b, meta...)
	}
	return append(b, "}}"...), nil
}

// refusedByHTTP turns a 4xx answer into the JSON-RPC error it carries, or
// one that quotes it.
func refusedByHTTP(resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if refusal := rpcError(body); refusal != nil {
		return refusal
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
		Message: fmt.Sprintf("upstream refused the call: %s: %s", resp.Status, strings.TrimSpace(string(body)))}
}

// rpcRefusal is the JSON-RPC error a non-2xx answer carries, if any.
func rpcRefusal(resp *http.Response) *jsonrpc.Error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return rpcError(body)
}

func rpcError(body []byte) *jsonrpc.Error {
	if m, err := decodeMessage(body); err == nil && m.Error != nil {
		return m.Error
	}
	return nil
}

// release reads what is left of an answer (the end of its event stream)
// so the connection can carry the next call, then closes it. A stream that
// does not end promptly is cut.
func release(body io.ReadCloser) {
	t := time.AfterFunc(50*time.Millisecond, func() { body.Close() })
	io.Copy(io.Discard, io.LimitReader(body, 1<<20))
	t.Stop()
	body.Close()
}

// ErrLost means the upstream connection broke before the answer came.
var ErrLost = fmt.Errorf("upstream connection lost")

// post sends a message Warden wrote itself (never an initialize) on the
// live session, or without one to a stateless-era upstream: a request or
// notification of method (a call of tool), or with method "" an answer.
// To a stateless-era upstream a message names its method, and a call its
// tool, in headers too, as the SDK's client writes them (verbatim).
func (d *direct) post(ctx context.Context, cs *mcp.ClientSession, body []byte, method, tool string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.cfg.Load().URL, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", cs.InitializeResult().ProtocolVersion)
	if method != "" && stateless(cs) {
		req.Header.Set("Mcp-Method", method)
		if tool != "" {
			req.Header.Set("Mcp-Name", tool)
		}
	}
	return d.http.exchange(req, body)
}

// withClient is a stateless-era call's params with what each request says
// of its client in _meta, as the SDK's client writes it (a key the params
// have stays): the revision and Warden's client info; askable put the
// capabilities.
func (d *direct) withClient(params *mcp.CallToolParams, cs *mcp.ClientSession) *mcp.CallToolParams {
	p := *params
	p.Meta = maps.Clone(params.Meta)
	if p.Meta == nil {
		p.Meta = mcp.Meta{}
	}
	if _, ok := p.Meta[mcp.MetaKeyProtocolVersion]; !ok {
		p.Meta[mcp.MetaKeyProtocolVersion] = cs.InitializeResult().ProtocolVersion
	}
	if _, ok := p.Meta[mcp.MetaKeyClientInfo]; !ok {
		p.Meta[mcp.MetaKeyClientInfo] = d.client
	}
	return &p
}

// readResumable reads an answer's event stream; when it breaks before the
// answer and the upstream numbered its events, it resumes the stream with
// Last-Event-ID, like the SDK client's transport retry, after the
// reconnection time the upstream last asked for (its retry field; SEP-1699
// makes waiting it a MUST). Only on a session: 2026-07-28 resumes nothing.
func (d *direct) readResumable(ctx context.Context, cs *mcp.ClientSession, resp *http.Response, body *answerReader, id string) (*rpcMessage, error) {
	lastID, retry := "", time.Duration(0)
	asked := &askedTable{}
	for attempt := 0; ; attempt++ {
		answer, err := d.readStream(ctx, cs, body, id, &lastID, &retry, asked)
		if answer != nil || ctx.Err() != nil || lastID == "" || attempt == 2 || stateless(cs) {
			return answer, err
		}
		if retry > 0 {
			select {
			case <-time.After(retry):
			case <-ctx.Done():
				return nil, err
			}
		}
		req, rerr := http.NewRequestWithContext(ctx, http.MethodGet, d.cfg.Load().URL, nil)
		if rerr != nil {
			return nil, err
		}
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Last-Event-ID", lastID)
		req.Header.Set("Mcp-Protocol-Version", cs.InitializeResult().ProtocolVersion)
		r, rerr := d.http.RoundTrip(req)
		if rerr != nil || r.StatusCode != http.StatusOK {
			if r != nil {
				r.Body.Close()
			}
			return nil, err
		}
		defer r.Body.Close()
		body.r, body.pending = r.Body, 0
		body.h.put()
	}
}

// readStream reads an answer's event stream until the response with id,
// handling what the upstream sends before it.
func (d *direct) readStream(ctx context.Context, cs *mcp.ClientSession, r *answerReader, id string, lastID *string, retry *time.Duration, asked *askedTable) (*rpcMessage, error) {
	var answer *rpcMessage
	err := scanEvents(r, retry, func(eventID string, data []byte) bool {
		*lastID = eventID
		m, err := decodeMessage(data)
		if len(data) == 0 || err != nil {
			r.eventDone()
			return false
		}
		if m.Method != "" || !idIs(m.ID, id) {
			defer r.eventDone()
		}
		switch {
		case m.Method == "" && idIs(m.ID, id):
			answer = m
			return true
		case m.Method != "" && len(m.ID) > 0:
			actx, done := asked.start(ctx, m.ID)
			go func(m rpcMessage) { defer done(); d.answerUpstream(actx, cs, m) }(*m)
		case m.Method == "notifications/cancelled":
			asked.cancel(m.Params)
		case m.Method != "" && (!isNotice(m.Method) || d.notices.allow()):
			d.notification(ctx, *m)
		}
		return false
	})
	return answer, err
}

func idIs(raw json.RawMessage, id string) bool {
	// The id is Warden's own (letters, digits, '-'): it comes back as it
	// went, unless the upstream spelled it with escapes.
	if len(raw) == len(id)+2 && raw[0] == '"' && string(raw[1:len(raw)-1]) == id {
		return true
	}
	if !bytes.Contains(raw, []byte(`\`)) {
		return false
	}
	var s string
	return json.Unmarshal(raw, &s) == nil && s == id
}

// notification routes what the upstream says during a call (ctx is the
// call's: log messages go to its caller).
func (d *direct) notification(ctx context.Context, m rpcMessage) {
	peer := d.peer
	switch m.Method {
	case "notifications/message":
		var p mcp.LoggingMessageParams
		if json.Unmarshal(m.Params, &p) == nil {
			peer.Log(ctx, d.name, &p)
		}
	case "notifications/progress":
		var p mcp.ProgressNotificationParams
		if json.Unmarshal(m.Params, &p) == nil {
			peer.Progress(d.name, &p)
		}
	case "notifications/resources/updated":
		var p mcp.ResourceUpdatedNotificationParams
		if json.Unmarshal(m.Params, &p) == nil {
			peer.ResourceUpdated(d.name, &p)
		}
	case "notifications/tools/list_changed", "notifications/prompts/list_changed", "notifications/resources/list_changed":
		d.refresh()
	}
}

// answerUpstream forwards a server-to-client request made during a call to
// the calling client and posts the answer back.
func (d *direct) answerUpstream(ctx context.Context, cs *mcp.ClientSession, m rpcMessage) {
	var result any
	var err error
	if bad := malformed(m.Method, m.Params); bad != nil {
		err = bad
	} else if q := question.New(m.Method); q != nil {
		if len(m.Params) > 0 { // roots/list may come without
			err = json.Unmarshal(m.Params, q)
		}
		if err == nil {
			result, err = d.peer.Ask(ctx, d.name, "", q)
		}
	} else if m.Method == "ping" {
		result = struct{}{}
	} else {
		// Worded as the SDK client words it.
		err = &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("method not found: %q", m.Method)}
	}
	reply := map[string]any{"jsonrpc": "2.0", "id": m.ID}
	if err != nil {
		reply["error"] = replyError(err)
	} else {
		reply["result"] = result
	}
	body, _ := json.Marshal(reply)
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if resp, err := d.post(pctx, cs, body, "", ""); err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// cancelUpstream tells the upstream a call was abandoned.
func (d *direct) cancelUpstream(cs *mcp.ClientSession, id string, cause error) {
	reason := "cancelled"
	if cause != nil {
		reason = cause.Error()
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/cancelled",
		"params": map[string]any{"requestId": id, "reason": reason}})
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if resp, err := d.post(ctx, cs, body, "notifications/cancelled", ""); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
}

// Call runs call, a tools/call, upstream: it waits for the live session
// (as Do), then admits the call (call.Admit) and sends it on the direct
// HTTP path or through the SDK client.
func (c *Conn) Call(ctx context.Context, call *Call) (*answer.Result, error) {
	var res *answer.Result
	err := c.Do(ctx, func(ctx context.Context, cs *mcp.ClientSession) (err error) {
		defer call.letGo()
		if err := call.admit(); err != nil {
			return err
		}
		res, err = c.callTool(ctx, cs, call)
		return err
	})
	return res, err
}

// callTool runs one tools/call upstream on the live session. A large
// answer holds room in the answers' bound until it has been sent (see
// answer.After), or until the call returns. To an upstream that speaks
// 2026-07-28, the direct HTTP path sends what the SDK client sends (the
// Mcp-Method and Mcp-Name headers, the client in _meta), but for a tool
// whose listing binds arguments to headers (x-mcp-header): its call goes
// through the SDK client, which writes them.
//
// Upstreams are told what the caller can answer (see askable): a
// stateless-era one always. A 2025 server goes by what Warden's session
// declared, all a client may be asked, unless told otherwise per request
// (the Go SDK's reads it so, and refuses a call that needs more than the
// caller can answer): it is told when the caller says it per request (a
// 2026-07-28 client) and answers less. A 2025 client's say is its
// session's, which Warden's stands for; telling every call again would
// cost the upstream a decode of each (a Go SDK server's: 5-25% of a call).
func (c *Conn) callTool(ctx context.Context, cs *mcp.ClientSession, call *Call) (*answer.Result, error) {
	call.hold = c.answers.hold()
	defer call.after(call.hold.end)
	ctx = WithCall(ctx, call)
	caller, perRequest := call.caller()
	if stateless(cs) {
		pass := c.passesTask(cs, call)
		params := askable(call.Params, caller, c.levels.forCalls(), pass)
		if pass {
			return c.direct.call(ctx, cs, call, params)
		}
		if c.list.bindsHeaders(params.Name) {
			return callSDK(ctx, cs, call, params) // the SDK writes the Mcp-Param-* headers
		}
		return c.callOnSession(ctx, cs, call, params)
	}
	params := call.Params
	if perRequest && !answersAll(caller) {
		params = askable(params, caller, "", false) // 2025: the session has the level
	}
	return c.callOnSession(ctx, cs, call, params)
}

// callSDK runs a tools/call through the SDK client (its rounds: see
// roundTrips).
func callSDK(ctx context.Context, cs *mcp.ClientSession, _ *Call, params *mcp.CallToolParams) (*answer.Result, error) {
	res, err := cs.CallTool(ctx, params)
	if err != nil {
		return nil, err
	}
	return answer.Decoded(res), nil
}

// call runs a tools/call on the direct HTTP path, round after round
// while its result asks for input, as roundTrips does on the SDK path.
func (d *direct) call(ctx context.Context, cs *mcp.ClientSession, call *Call, params *mcp.CallToolParams) (*answer.Result, error) {
	for round := 1; ; round++ {
		res, asks, err := d.callToolHTTP(ctx, cs, call, params)
		if err != nil || !asks {
			return res, err
		}
		tr, err := res.Tool()
		if err != nil {
			return nil, fmt.Errorf("tools/call: bad result: %w", err)
		}
		answers, err := d.ask.answerRound(ctx, "tools/call", round, tr.InputRequests)
		if err != nil {
			return nil, err
		}
		p := *params
		p.InputResponses, p.RequestState = answers, tr.RequestState
		params = &p
	}
}
