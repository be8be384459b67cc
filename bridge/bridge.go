// Package bridge connects an MCP client that speaks stdio to Warden's
// streamable-HTTP endpoint: each line from the client is POSTed, each message
// that comes back (JSON or server-sent events, including the standalone GET
// stream for notifications) is written to the client as a line. It is
// message-transparent, so everything the endpoint supports works through it.
//
// Messages leave in the order the client wrote them, while requests still run
// concurrently. When Warden restarts (it answers 404 for the session), the
// bridge starts a new session by replaying the client's initialize, so the
// client sees nothing but a working connection.
package bridge

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/wardenmcp/warden/protocol"
)

// Bridge pumps one stdio client to one endpoint.
type Bridge struct {
	URL    string
	Client *http.Client
	Where  string // the daemon's address as messages name it; URL when ""
	// Token, if set, is sent as the bearer token of every request: the
	// daemon's config knows callers (its "clients").
	Token string

	out   io.Writer
	outMu sync.Mutex

	mu          sync.Mutex // guards the fields up to calls
	session     string
	version     string
	established bool                 // the first initialize went through
	initReq     []byte               // the client's initialize, replayed for a new session
	initNote    []byte               // the client's notifications/initialized, replayed after it
	calls       map[string]*inflight // requests waiting for their answer, by idKey

	renewed chan struct{} // wakes the listener when a new session starts
	renewMu sync.Mutex    // one new session at a time
	wg      sync.WaitGroup
}

// maxLine bounds one message from the client.
const maxLine = 16 << 20

// idPrefix is how much of an oversized message is kept to find its id.
const idPrefix = 64 << 10

// reconnectFor is how long a message is retried while Warden cannot be
// reached (a restarting daemon), once a session was established.
const reconnectFor = 5 * time.Second

// cancelGrace is how long after a request was written a cancellation of it
// is held back. The two travel on different connections, and Warden ignores
// a cancellation that comes before it has taken the request in.
const cancelGrace = 50 * time.Millisecond

// inflight is a request waiting for its answer.
type inflight struct {
	sent      time.Time // when it was written to the connection
	cancelled bool      // the client cancelled it: no made-up answer is owed
	abort     context.CancelFunc
}

// dropCancelled stops waiting for the answers of the requests the client
// cancelled: a client that is gone is owed none, and an endpoint may hold
// such a request's response open.
func (b *Bridge) dropCancelled() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, c := range b.calls {
		if c.cancelled {
			c.abort()
		}
	}
}

// errSessionGone is Warden's 404 for a session: it restarted or closed it.
var errSessionGone = errors.New("warden no longer knows the session")

// errEnded is the answer to a request whose response ended without a reply
// (Warden closed the session or went away mid-call).
var errEnded = errors.New("the connection to Warden ended before the answer")

// Run copies messages until in ends or ctx is done, then ends the session.
func (b *Bridge) Run(ctx context.Context, in io.Reader, out io.Writer) error {
	if b.Client == nil {
		b.Client = &http.Client{}
	}
	b.out = out
	b.calls = map[string]*inflight{}
	b.renewed = make(chan struct{}, 1)
	listenCtx, stopListen := context.WithCancel(ctx)
	listening := make(chan struct{})
	started := false
	stopListening := func() {
		stopListen()
		if started { // else nothing closes listening (a failed initialize returns early)
			<-listening
		}
	}
	defer stopListening()
	rd := bufio.NewReaderSize(in, 64<<10)
	for {
		line, tooLong, err := readLine(rd)
		if err != nil {
			b.dropCancelled()
			b.wg.Wait()
			stopListening() // else it would take the session's end for a lost session, and start another
			b.end()
			if err == io.EOF {
				return nil
			}
			return err
		}
		if tooLong {
			b.refuseLong(line)
			continue
		}
		msg := bytes.TrimSpace(line)
		if len(msg) == 0 {
			continue
		}
		// Every line goes to Warden, which answers one that is no JSON-RPC
		// message as JSON-RPC says.
		var m envelope
		_ = json.Unmarshal(msg, &m) // a message that is not JSON is forwarded as it is
		switch {
		case m.Method == "initialize":
			// The session id comes back on initialize: later requests need it.
			if err := b.initialize(ctx, msg); err != nil {
				return err
			}
			if !started {
				started = true
				go func() { defer close(listening); b.listen(listenCtx) }()
			}
		case m.Method != "" && protocol.IsRequestID(m.ID):
			b.call(ctx, msg, m.ID)
		case isBatch(msg):
			b.batch(ctx, msg)
		default:
			// Notifications and answers to Warden's requests are quick: each
			// is delivered before the next message leaves.
			b.note(msg, m.Method)
			_ = b.deliver(ctx, msg, b.write, nil)
		}
	}
}

// envelope is what the bridge reads of a message.
type envelope struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
}

// idKey normalizes an id for comparison: Warden echoes 1.0 as 1 and may
// escape strings differently.
func idKey(id json.RawMessage) string {
	var v any
	if json.Unmarshal(id, &v) != nil {
		return string(id)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// initialize posts the client's initialize and keeps it, its answer's
// session id and protocol version for the requests that follow.
func (b *Bridge) initialize(ctx context.Context, msg []byte) error {
	var version string
	session, err := b.post(ctx, msg, "", "", func(m []byte) {
		if v := protocolVersion(m); v != "" {
			version = v
		}
		b.write(m)
	}, nil)
	if err != nil || version == "" {
		return err // refused: the client has Warden's answer, and may try again
	}
	b.mu.Lock()
	b.initReq, b.session, b.version, b.established = msg, session, version, true
	b.mu.Unlock()
	return nil
}

// protocolVersion is the version an initialize answer negotiated, or "".
func protocolVersion(msg []byte) string {
	if !bytes.Contains(msg, []byte(`"protocolVersion"`)) {
		return ""
	}
	var m struct {
		Result struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"result"`
	}
	_ = json.Unmarshal(msg, &m)
	return m.Result.ProtocolVersion
}

// note remembers what a notification changes: notifications/initialized is
// replayed on a new session; a cancelled request gets no made-up answer, and
// its cancellation waits until cancelGrace has passed since it was sent.
func (b *Bridge) note(msg []byte, method string) {
	switch method {
	case "notifications/initialized":
		b.mu.Lock()
		b.initNote = msg
		b.mu.Unlock()
	case "notifications/cancelled":
		var m struct {
			Params struct {
				RequestID json.RawMessage `json:"requestId"`
			} `json:"params"`
		}
		if json.Unmarshal(msg, &m) == nil && protocol.IsRequestID(m.Params.RequestID) {
			var wait time.Duration
			b.mu.Lock()
			if c := b.calls[idKey(m.Params.RequestID)]; c != nil {
				c.cancelled = true
				wait = cancelGrace - time.Since(c.sent)
			}
			b.mu.Unlock()
			if wait > 0 {
				time.Sleep(wait)
			}
		}
	}
}

// call sends a request and returns once it is written to the connection, so
// what the client sends next cannot overtake it; the answer, which may take
// long, is awaited in the background. A request left without a reply is
// answered with an error, so the client is not left waiting.
func (b *Bridge) call(ctx context.Context, msg []byte, id json.RawMessage) {
	key := idKey(id)
	ctx, abort := context.WithCancel(ctx)
	c := &inflight{abort: abort}
	b.mu.Lock()
	b.calls[key] = c
	b.mu.Unlock()
	written := make(chan struct{})
	var once sync.Once
	wrote := func() { once.Do(func() { close(written) }) }
	b.wg.Go(func() {
		defer abort()
		defer wrote()
		answered := false
		err := b.deliver(ctx, msg, func(m []byte) {
			if !answered && isReplyTo(m, key) {
				answered = true
			}
			b.write(m)
		}, wrote)
		b.mu.Lock()
		cancelled := c.cancelled
		if b.calls[key] == c {
			delete(b.calls, key)
		}
		b.mu.Unlock()
		if answered || cancelled {
			return
		}
		if err == nil {
			err = errEnded
		}
		b.writeError(id, jsonrpc.CodeInternalError, err.Error())
	})
	<-written
	b.mu.Lock()
	c.sent = time.Now()
	b.mu.Unlock()
}

// batch forwards a batch (of the 2025-03-26 revision; later ones have none)
// and waits for its answer. When Warden refuses it, every request in it is
// answered, in one batch, with why: else the client would wait for good.
func (b *Bridge) batch(ctx context.Context, msg []byte) {
	err := b.deliver(ctx, msg, b.write, nil)
	if err == nil {
		return
	}
	code := int64(jsonrpc.CodeInternalError) // Warden could not be reached, or failed
	var re *refusedError
	if errors.As(err, &re) && re.status < 500 {
		code = jsonrpc.CodeInvalidRequest
	}
	var members []envelope
	_ = json.Unmarshal(msg, &members) // check has seen to it
	var answers []protocol.ErrorReply
	for _, m := range members {
		if m.Method != "" && protocol.IsRequestID(m.ID) {
			answers = append(answers, protocol.NewErrorReply(m.ID, code, err.Error()))
		}
	}
	b.writeErrors(answers, true)
}

// isReplyTo reports whether msg is the response to the request with id key.
func isReplyTo(msg []byte, key string) bool {
	var m envelope
	return json.Unmarshal(msg, &m) == nil && m.Method == "" && protocol.IsRequestID(m.ID) && idKey(m.ID) == key
}

// refusal reads body, Warden's answer to msg with an HTTP error status: the
// JSON-RPC error answer to msg it holds (one under msg's id, or under none
// when msg has none; for a batch, a batch), or what it says (reason).
func refusal(body, msg []byte) (answer bool, reason string) {
	if isBatch(msg) && isBatch(body) {
		return true, ""
	}
	var m struct {
		envelope
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &m) != nil || m.Method != "" || m.Error == nil {
		return false, ""
	}
	key, under := idKeyOf(msg), protocol.IsRequestID(m.ID)
	switch {
	case under && idKey(m.ID) == key, // under msg's id
		!under && key == "": // under none, as msg has none
		return true, ""
	case !under: // under none, though msg has an id: the bridge answers under it
		return false, m.Error.Message
	}
	return false, ""
}

func (b *Bridge) current() (session, version string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.session, b.version
}

// deliver posts msg on the current session; if Warden no longer knows the
// session, it starts a new one and posts msg once more.
func (b *Bridge) deliver(ctx context.Context, msg []byte, emit func([]byte), wrote func()) error {
	session, version := b.current()
	_, err := b.post(ctx, msg, session, version, emit, wrote)
	if errors.Is(err, errSessionGone) {
		if err = b.renew(ctx, session); err == nil {
			session, version = b.current()
			_, err = b.post(ctx, msg, session, version, emit, wrote)
		}
	}
	return err
}

// renew starts a new session after Warden answered 404 for session old (it
// restarted or closed the session), as the MCP spec asks: it replays the
// client's initialize, swallows the answer, and repeats
// notifications/initialized if the client sent it. Callers that saw the same
// old session share one renewal.
func (b *Bridge) renew(ctx context.Context, old string) error {
	b.renewMu.Lock()
	defer b.renewMu.Unlock()
	b.mu.Lock()
	current, init, note := b.session, b.initReq, b.initNote
	b.mu.Unlock()
	if current != old {
		return nil // renewed meanwhile
	}
	if init == nil {
		return errSessionGone
	}
	var version string
	session, err := b.post(ctx, init, "", "", func(m []byte) {
		if v := protocolVersion(m); v != "" {
			version = v
		}
	}, nil)
	if err == nil && session == "" {
		err = errors.New("warden answered initialize without a session")
	}
	if err == nil && note != nil {
		_, err = b.post(ctx, note, session, version, func([]byte) {}, nil)
	}
	if err != nil {
		return fmt.Errorf("starting a new session after warden lost the old one: %w", err)
	}
	b.mu.Lock()
	b.session, b.version = session, version
	b.mu.Unlock()
	select { // the listener follows the new session at once
	case b.renewed <- struct{}{}:
	default:
	}
	// What the client listed may have changed while Warden was away.
	for _, kind := range []string{"tools", "prompts", "resources"} {
		b.write([]byte(`{"jsonrpc":"2.0","method":"notifications/` + kind + `/list_changed"}`))
	}
	return nil
}

// post sends msg once on session and passes each message of the answer to
// emit; it returns the session id an initialize answer carries. wrote, if
// set, is called when the request has been written to the connection. While
// Warden cannot be reached, a bridge that had a session retries for
// reconnectFor (the daemon is restarting): nothing was sent yet.
func (b *Bridge) post(ctx context.Context, msg []byte, session, version string, emit func([]byte), wrote func()) (string, error) {
	if wrote != nil {
		ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { wrote() }})
	}
	var resp *http.Response
	deadline := time.Now().Add(reconnectFor)
	for delay := 50 * time.Millisecond; ; delay = min(2*delay, time.Second) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.URL, bytes.NewReader(msg))
		if err != nil {
			return "", err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		b.setHeaders(req.Header, session, version)
		if session == "" {
			statelessHeaders(req.Header, msg)
		}
		if resp, err = b.Client.Do(req); err == nil {
			break
		}
		b.mu.Lock()
		retry := b.established && unreachable(err) && time.Now().Add(delay).Before(deadline)
		b.mu.Unlock()
		if !retry {
			return "", fmt.Errorf("cannot reach warden at %s (is \"warden serve\" running?): %w", cmp.Or(b.Where, b.URL), err)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(delay):
		}
	}
	defer resp.Body.Close()
	newSession := resp.Header.Get("Mcp-Session-Id")
	switch {
	case resp.StatusCode == http.StatusNotFound && session != "":
		return "", errSessionGone
	case resp.StatusCode == http.StatusAccepted:
		return newSession, nil
	case resp.StatusCode >= 300:
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxLine))
		body = bytes.TrimSpace(body)
		// Warden answers what it refuses with an HTTP status and the
		// JSON-RPC error that says why: the error is the answer.
		answer, reason := refusal(body, msg)
		switch {
		case answer:
			emit(body)
			return newSession, nil
		case reason != "":
			return "", &refusedError{status: resp.StatusCode, text: reason}
		}
		if len(body) > 4096 {
			body = body[:4096]
		}
		return "", &refusedError{status: resp.StatusCode, text: fmt.Sprintf("warden answered %s: %s", resp.Status, body)}
	case strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream"):
		if _, err := readEvents(resp.Body, emit); err != nil {
			return newSession, fmt.Errorf("%w: %v", errEnded, err)
		}
		return newSession, nil
	default:
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return newSession, fmt.Errorf("%w: %v", errEnded, err)
		}
		if body = bytes.TrimSpace(body); len(body) > 0 {
			emit(body)
		}
		return newSession, nil
	}
}

// isBatch reports whether msg is a JSON array: a batch, or its answer.
func isBatch(msg []byte) bool { return len(msg) > 0 && msg[0] == '[' }

// refusedError is Warden's HTTP refusal of a message, without a JSON-RPC
// answer to it in it.
type refusedError struct {
	status int
	text   string
}

func (e *refusedError) Error() string { return e.text }

// unreachable reports whether err is a failure to connect, so nothing was sent.
func unreachable(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// idKeyOf is the idKey of msg's id, "" if it has none.
func idKeyOf(msg []byte) string {
	var m envelope
	if json.Unmarshal(msg, &m) != nil || !protocol.IsRequestID(m.ID) {
		return ""
	}
	return idKey(m.ID)
}

// statelessHeaders sets the headers the 2026-07-28 revision's HTTP transport
// asks of a request that names that revision (or a later one) in its _meta:
// it has no session, so the bridge has no version of its own to send.
func statelessHeaders(h http.Header, msg []byte) {
	var m struct {
		Method string `json:"method"`
		Params struct {
			Name string `json:"name"`
			URI  string `json:"uri"`
			Meta struct {
				Version string `json:"io.modelcontextprotocol/protocolVersion"`
			} `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(msg, &m) != nil || m.Params.Meta.Version < protocol.StatelessSince {
		return
	}
	h.Set("Mcp-Protocol-Version", m.Params.Meta.Version)
	h.Set("Mcp-Method", m.Method)
	switch m.Method {
	case "tools/call", "prompts/get":
		h.Set("Mcp-Name", m.Params.Name)
	case "resources/read":
		h.Set("Mcp-Name", m.Params.URI)
	}
}

// setHeaders sets the headers of every request: the session's and the
// token.
func (b *Bridge) setHeaders(h http.Header, session, version string) {
	if b.Token != "" {
		h.Set("Authorization", "Bearer "+b.Token)
	}
	if session != "" {
		h.Set("Mcp-Session-Id", session)
	}
	if version != "" {
		h.Set("Mcp-Protocol-Version", version)
	}
}

// write sends one message to the client as a line.
func (b *Bridge) write(msg []byte) {
	b.outMu.Lock()
	defer b.outMu.Unlock()
	b.out.Write(append(msg, '\n'))
}

// writeError answers request id with a JSON-RPC error.
func (b *Bridge) writeError(id json.RawMessage, code int64, message string) {
	b.writeErrors([]protocol.ErrorReply{protocol.NewErrorReply(id, code, message)}, false)
}

// writeErrors writes answers, each on its line or, batched, all in one
// batch (none when there are none, as for a batch of notifications).
func (b *Bridge) writeErrors(answers []protocol.ErrorReply, batched bool) {
	switch {
	case batched && len(answers) > 0:
		b.write(protocol.EncodeReplies(answers, true))
	case !batched:
		for _, r := range answers {
			b.write(protocol.EncodeReplies([]protocol.ErrorReply{r}, false))
		}
	}
}

func (b *Bridge) end() {
	session, version := b.current()
	if session == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, b.URL, nil)
	if err != nil {
		return
	}
	b.setHeaders(req.Header, session, version)
	if resp, err := b.Client.Do(req); err == nil {
		resp.Body.Close()
	}
}
