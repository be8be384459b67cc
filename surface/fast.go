package surface

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/answer"
	"github.com/wardenmcp/warden/callers"
	"github.com/wardenmcp/warden/gateway"
	"github.com/wardenmcp/warden/question"
)

// The fast path. A plain tools/call on an initialized session is the hot
// path of a gateway, and the SDK server's general machinery costs more than
// everything Warden itself does; so such a call is served here directly: the
// same gateway call path, the same policy, answered as JSON, or as an event
// stream when the upstream talks to the client during the call (log
// messages, sampling, elicitation, roots). The client's answers to those
// requests, and its cancellations of fast calls, are caught here too.
// Everything else (calls with a progress token, batches, every other
// method) goes to the SDK server.

// rpc is an incoming JSON-RPC message, decoded in one pass just enough to
// route it: the params of the messages the fast path takes are read along.
type rpc struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  struct {
		mcp.CallToolParamsRaw                 // tools/call
		RequestID             json.RawMessage `json:"requestId"` // notifications/cancelled
		Cursor                *string         `json:"cursor"`    // tools/list
	} `json:"params"`
}

// fastRequestPrefix marks ids of requests Warden sends clients on fast calls.
const fastRequestPrefix = "warden-fp-"

var fastRequestSeq atomic.Uint64

// serveFast handles body, a POST on session l, if it belongs to the fast
// path, reporting whether it did.
func (v *view) serveFast(w http.ResponseWriter, r *http.Request, l *live, body []byte) bool {
	if len(body) == 0 || body[0] != '{' {
		return false
	}
	var m rpc
	if json.Unmarshal(body, &m) != nil || m.JSONRPC != "2.0" || !spelledAsSDK(body, "name", "arguments", "_meta", "inputResponses", "requestState", "requestId", "cursor") {
		return false // the SDK says what is wrong
	}
	switch {
	case m.Method == "" || m.Method == "notifications/cancelled":
		if !l.answer(&m, body) {
			return false
		}
		w.WriteHeader(http.StatusAccepted)
		return true
	case m.Method == "tools/call" && validID(m.ID):
		l.use(m.Method)
		v.fastCall(w, r, l, m.ID, &m.Params.CallToolParamsRaw)
		return true
	case m.Method == "tools/list" && validID(m.ID) && m.Params.Cursor == nil:
		list := v.toolList(v.callerOf(r.Header).Profile)
		if list == nil {
			return false
		}
		l.use(m.Method)
		// As an event, as the SDK answers it. Encoded by json.Marshal, the
		// list holds no line breaks, nor does a valid id.
		startEvents(w)
		_ = writeEvent(w, replyTo(m.ID, &answer.Result{Raw: list}, nil))
		return true
	}
	return false
}

// toolList is the result of a tools/list of the view, from the definitions
// encoded when they were listed: encoding them again for every list was
// most of its cost. It is what the SDK server answers (a test checks), or
// nil when that is more than one page, which the SDK serves, and for the
// search view, whose two tools are the SDK server's own. With a profile
// (callers.go), it lists only the tools the profile allows, built for
// the request.
func (v *view) toolList(profile *callers.Profile) json.RawMessage {
	if v.index != nil {
		return nil
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.toolsJSON != nil && profile == nil {
		return v.toolsJSON
	}
	var names []string
	for key := range v.listed {
		if name, ok := strings.CutPrefix(key, "tool:"); ok && (profile == nil || v.allowedLocked(name, profile)) {
			names = append(names, name)
		}
	}
	if len(names) > mcp.DefaultPageSize {
		return nil
	}
	slices.Sort(names) // the SDK's order
	empty := &mcp.ListToolsResult{Tools: []*mcp.Tool{}}
	empty.CacheScope = "public" // the SDK's default, sent as it does
	head, err := json.Marshal(empty)
	if err != nil || !bytes.HasSuffix(head, []byte(`[]}`)) {
		return nil
	}
	b := append([]byte(nil), head[:len(head)-2]...)
	for i, name := range names {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, v.listed["tool:"+name]...)
	}
	b = append(b, "]}"...)
	if profile == nil {
		v.toolsJSON = b
	}
	return b
}

// spelledAsSDK reports whether body, a JSON-RPC message already found to
// be valid JSON, is one the SDK reads as Go's decoder does, in one pass:
// its keys and those of its params named here spelled as named (Go's
// decoder takes "Method" for "method", the SDK's does not), no key with
// an escape in it, and nested no deeper than near the SDK's limit (1000;
// Go's is 10000). Whatever is not goes to the SDK.
func spelledAsSDK(body []byte, params ...string) bool {
	const maxDepth = 900
	var open []byte     // the containers open: '{' or '['
	key := false        // the next string is an object's key
	topKey := ""        // the last key of the message object
	paramsOpen := false // the second container open is the params object
	for i := 0; i < len(body); i++ {
		switch c := body[i]; c {
		case '{', '[':
			if len(open) == maxDepth {
				return false
			}
			if len(open) == 1 {
				paramsOpen = c == '{' && open[0] == '{' && topKey == "params"
			}
			open = append(open, c)
			key = c == '{'
		case '}', ']':
			open = open[:len(open)-1]
			key = false
		case ',':
			key = len(open) > 0 && open[len(open)-1] == '{'
		case '"':
			end, escaped := i+1, false
			for {
				end += bytes.IndexAny(body[end:], `"\`)
				if body[end] == '"' {
					break
				}
				escaped = true
				end += 2
			}
			top, inParams := len(open) == 1 && open[0] == '{', len(open) == 2 && paramsOpen
			if key && (top || inParams) {
				k := string(body[i+1 : end])
				switch {
				case escaped:
					return false
				case top && !exactKey(k, "jsonrpc", "id", "method", "params"),
					inParams && !exactKey(k, params...):
					return false
				case top:
					topKey = k
				}
			}
			key = false
			i = end
		}
	}
	return true
}

// exactKey reports whether k matches none of keys but for case.
func exactKey(k string, keys ...string) bool {
	for _, want := range keys {
		if k != want && strings.EqualFold(k, want) {
			return false
		}
	}
	return true
}

// validID reports whether raw is a request id the SDK would send back
// byte for byte: an integer of at most 18 digits (the SDK reads numbers as
// int64: 1.5 comes back as 1, 1e2 as 100), or a string of printable ASCII
// with nothing to escape. Others go to the SDK.
func validID(raw json.RawMessage) bool {
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' {
		for _, c := range raw[1 : len(raw)-1] {
			if c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
				return false
			}
		}
		return true
	}
	digits := bytes.TrimPrefix(raw, []byte("-"))
	if len(digits) == 0 || len(digits) > 18 || digits[0] == '0' && (len(digits) > 1 || len(raw) > 1) {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func (v *view) fastCall(w http.ResponseWriter, r *http.Request, l *live, id json.RawMessage, p *mcp.CallToolParamsRaw) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	after := &answer.After{}
	defer after.Run() // once the answer is sent
	st := &stream{w: w, l: l}
	if !l.begin(string(id), cancel) {
		// Its cancellation could not tell the two apart.
		st.finish(replyTo(id, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "a request with id " + string(id) + " is already in progress"}))
		return
	}
	defer l.end(string(id))
	res, err := v.call(ctx, p, st, after, v.originOf(r.Header, l.ss.Load(), p.Meta))
	st.finish(replyTo(id, res, err))
}

// replyTo is the JSON-RPC response to a fast call. The upstream's result
// JSON (checked when it was read) and the client's id (checked likewise)
// are passed on as they are, in pieces: a large result is not copied.
func replyTo(id json.RawMessage, res *answer.Result, err error) reply {
	if err == nil && res != nil && res.Raw != nil {
		return resultReply(id, res.Raw)
	}
	m := map[string]any{"jsonrpc": "2.0", "id": id}
	if err != nil {
		m["error"] = wireError(err)
	} else {
		m["result"] = res
	}
	b, _ := json.Marshal(m)
	return reply{b}
}

// resultReply is the JSON-RPC response to id whose result is the JSON
// result, in pieces.
func resultReply(id json.RawMessage, result ...[]byte) reply {
	head := make([]byte, 0, 32+len(id))
	head = append(head, `{"jsonrpc":"2.0","id":`...)
	head = append(head, id...)
	head = append(head, `,"result":`...)
	return append(append(reply{head}, result...), []byte("}"))
}

// wireError is err as the SDK's server sends it: a JSON-RPC error as it
// is; another with its message and the code of a JSON-RPC error it wraps
// (0 for none).
func wireError(err error) *jsonrpc.Error {
	if werr, ok := err.(*jsonrpc.Error); ok {
		return werr
	}
	out := &jsonrpc.Error{Message: err.Error()}
	var inner *jsonrpc.Error
	if errors.As(err, &inner) {
		out.Code = inner.Code
	}
	return out
}

// reply is a JSON message in pieces.
type reply [][]byte

func (r reply) bytes() []byte { return bytes.Join(r, nil) }

// stream is a fast call's response: JSON unless something must be sent
// before the answer, then an event stream. It is the call's gateway.Client.
type stream struct {
	w http.ResponseWriter
	l *live

	// status is the HTTP status of an answer as JSON (0: 200 OK).
	status int

	mu      sync.Mutex
	started bool // event stream headers written
	done    bool
}

func (s *stream) send(msg any) error {
	b, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return fmt.Errorf("the call has ended")
	}
	return s.eventLocked(b)
}

func (s *stream) eventLocked(b []byte) error {
	if !s.started {
		s.started = true
		startEvents(s.w)
	}
	if bytes.ContainsAny(b, "\r\n") {
		// An event's data is one line: JSON passed on as it came may
		// hold line breaks between its tokens.
		var c bytes.Buffer
		if err := json.Compact(&c, b); err != nil {
			return err
		}
		b = c.Bytes()
	}
	return writeEvent(s.w, reply{b})
}

func startEvents(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
}

// writeEvent writes a message (JSON without line breaks) as one event.
func writeEvent(w http.ResponseWriter, r reply) error {
	for _, b := range append(reply{[]byte("event: message\ndata: ")}, append(r, []byte("\n\n"))...) {
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	return nil
}

// finish writes the answer, as JSON unless the event stream has begun, and
// ends the stream: whatever the upstream still sends for the call is dropped.
func (s *stream) finish(r reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.done = true
	if s.started {
		_ = s.eventLocked(r.bytes())
		return
	}
	n := 0
	for _, b := range r {
		n += len(b)
	}
	h := s.w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(n))
	if s.status != 0 {
		s.w.WriteHeader(s.status)
	}
	for _, b := range r {
		if _, err := s.w.Write(b); err != nil {
			return
		}
	}
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush() // the answer goes now, before the work left for after it
	}
}

// request sends the client a request on this call's stream and waits for
// the answer it posts back.
func (s *stream) request(ctx context.Context, method string, params, result any) error {
	id := fastRequestPrefix + strconv.FormatUint(fastRequestSeq.Add(1), 36)
	ch := make(chan json.RawMessage, 1)
	s.l.mu.Lock()
	s.l.pending[id] = ch
	s.l.mu.Unlock()
	defer func() {
		s.l.mu.Lock()
		delete(s.l.pending, id)
		s.l.mu.Unlock()
	}()
	if err := s.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params}); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		// With the reason the SDK's server session gives.
		_ = s.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": map[string]any{"requestId": id, "reason": ctx.Err().Error()}})
		return ctx.Err()
	case raw := <-ch:
		var m struct {
			Result json.RawMessage `json:"result"`
			Error  *jsonrpc.Error  `json:"error"`
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			return err
		}
		if m.Error != nil {
			return m.Error
		}
		return json.Unmarshal(m.Result, result)
	}
}

// The gateway.Client side.

func (s *stream) Capabilities() *mcp.ClientCapabilities {
	return gateway.SessionClient{ServerSession: s.l.ss.Load()}.Capabilities()
}

func (s *stream) Ask(ctx context.Context, _ string, q mcp.InputRequest) (mcp.InputResponse, error) {
	q = question.Prepare(q)
	a := question.NewAnswer(q)
	if err := s.request(ctx, question.Method(q), q, a); err != nil {
		return nil, err
	}
	return question.Checked(q, a)
}

func (s *stream) Progress(_ context.Context, p *mcp.ProgressNotificationParams) {
	_ = s.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/progress", "params": p})
}

func (s *stream) Log(_ context.Context, p *mcp.LoggingMessageParams) {
	if s.l.wants(p.Level) {
		_ = s.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/message", "params": p})
	}
}
