package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wardenmcp/warden/config"
	"github.com/wardenmcp/warden/sessions"
)

// SessionStore persists streamable-HTTP upstream sessions across restarts.
type SessionStore interface {
	Load(server, fingerprint string) (sessions.Record, bool)
	Save(r sessions.Record, mode string) error
	MarkResumed(server string)
	Delete(server string) error
}

// Session events reported through Options.SessionEvent.
const (
	SessionResumed       = "resumed"       // a stored session was taken up without initialize
	SessionExpired       = "expired"       // the upstream no longer knew a resumed session
	SessionReinitialized = "reinitialized" // a fresh initialize replaced an expired session
	SessionFresh         = "fresh"         // a new session was initialized
)

// sessionTransport is the round tripper of a streamable-HTTP upstream. It
// owns the upstream session id, so that a session persisted by an earlier
// Warden can be resumed: the SDK's initialize is answered here from the
// stored initialize result, and requests go out on the stored session id.
// If the first request on a resumed session is answered 404, 401 or 403, the
// record is dropped, one fresh initialize is done with the live config's
// headers, and the request is retried once; the caller sees nothing.
//
// It also decides what closing does to the session: kept for the next start
// (Warden stopping) or deleted upstream (server removed or disabled).
type sessionTransport struct {
	*headerTransport
	cfg    *config.Server
	store  SessionStore
	log    *slog.Logger
	event  func(kind string)
	forget atomic.Bool // send the DELETE that closing a session makes

	mu        sync.Mutex
	session   string // the live upstream session id
	initBody  []byte // the SDK's initialize request, replayed for a fallback
	resumed   bool   // the session was taken up from the store, not initialized here
	firstLeft bool   // resumed, and the session not yet probed
	probe     sync.Mutex
	failed    *failure // the fallback failed: answer every request so until the next initialize
}

// failure is an upstream answer replayed to every request of a dead session.
type failure struct {
	status int
	header http.Header
	body   []byte
}

func newSessionTransport(cfg *config.Server, store SessionStore, log *slog.Logger, event func(string)) *sessionTransport {
	if event == nil {
		event = func(string) {}
	}
	return &sessionTransport{headerTransport: newHeaderTransport(cfg.Headers), cfg: cfg, store: store, log: log, event: event}
}

func (t *sessionTransport) endSessionOnClose(forget bool) { t.forget.Store(forget) }

func (t *sessionTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	switch req.Method {
	case http.MethodDelete:
		return t.delete(req)
	case http.MethodPost:
		return t.post(req)
	}
	return t.standaloneGET(req)
}

// standaloneGET opens the standalone GET stream. A resumed session (after a
// restart, or a reload that replaced the connection) may still have the
// previous connection's stream open upstream for a moment, and a second GET
// is then answered 409; the SDK would give the stream up for good, and with
// it every list_changed (so rug pulls would go unseen). Retry until the old
// stream is released, for about a second.
func (t *sessionTransport) standaloneGET(req *http.Request) (*http.Response, error) {
	for delay := 10 * time.Millisecond; ; delay *= 2 {
		resp, err := t.exchange(req, nil)
		if err != nil || resp.StatusCode != http.StatusConflict || delay > 640*time.Millisecond {
			return resp, err
		}
		resp.Body.Close()
		select {
		case <-time.After(delay):
		case <-req.Context().Done():
			return nil, req.Context().Err()
		}
	}
}

func (t *sessionTransport) setSession(req *http.Request) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.session != "" {
		req.Header.Set("Mcp-Session-Id", t.session)
	} else {
		req.Header.Del("Mcp-Session-Id") // a fresh initialize: not the dead session's
	}
}

func (t *sessionTransport) delete(req *http.Request) (*http.Response, error) {
	if !t.forget.Load() {
		// Warden is stopping, not removing the server: keep the session.
		return localResponse(req, http.StatusNoContent, nil, nil), nil
	}
	t.setSession(req)
	t.forgetRecord()
	return t.headerTransport.RoundTrip(req)
}

// forgetRecord drops the stored session.
func (t *sessionTransport) forgetRecord() {
	if t.store != nil {
		if err := t.store.Delete(t.cfg.Name); err != nil {
			t.log.Warn("dropping stored session failed", "err", err)
		}
	}
}

func (t *sessionTransport) post(req *http.Request) (*http.Response, error) {
	body, err := readBody(req)
	if err != nil {
		return nil, err
	}
	method, id := peekMethod(body)
	switch method {
	case "initialize":
		return t.initialize(req, body, id)
	case taskGet, taskUpdate, taskCancel:
		req = nameTask(req, body)
	case "notifications/initialized":
		t.mu.Lock()
		resumed := t.resumed
		t.mu.Unlock()
		if resumed { // the stored session was initialized long ago
			return localResponse(req, http.StatusAccepted, nil, nil), nil
		}
	}
	resp, err := t.exchange(req, body)
	if tap := listTapOf(req.Context()); tap != nil && method == "tools/list" && err == nil && resp.StatusCode == http.StatusOK {
		// A listing pass reads the tools' execution (execution.go).
		resp.Body = &tapBody{ReadCloser: resp.Body, tap: tap, sse: strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")}
	}
	return resp, err
}

// exchange sends a request on the live session. Before the first request on
// a resumed session goes out, the session is probed with a ping (so the
// request itself is sent once, on a session known to be alive).
func (t *sessionTransport) exchange(req *http.Request, body []byte) (*http.Response, error) {
	if err := t.ensureProbed(req); err != nil {
		return nil, err
	}
	t.mu.Lock()
	failed := t.failed
	t.mu.Unlock()
	if failed != nil {
		return localResponse(req, failed.status, failed.header.Clone(), failed.body), nil
	}
	resp, err := t.send(req, body)
	if err == nil && resp.StatusCode == http.StatusNotFound {
		// The session ended upstream (or, without sessions, a method is
		// unknown: there is no record then). The SDK fails this
		// connection; the next one must not resume it.
		t.forgetRecord()
	}
	return resp, err
}

var probeBody = []byte(`{"jsonrpc":"2.0","id":"warden-resume-probe","method":"ping"}`)

// ensureProbed checks a resumed session once. Answered 404, 401 or 403, the
// record is dropped and one fresh initialize is done with the live config;
// if that fails too, its answer is what every request gets.
func (t *sessionTransport) ensureProbed(req *http.Request) error {
	t.mu.Lock()
	first := t.firstLeft
	t.mu.Unlock()
	if !first {
		return nil
	}
	// Requests that come meanwhile wait here for the probe's outcome.
	t.probe.Lock()
	defer t.probe.Unlock()
	t.mu.Lock()
	first = t.firstLeft
	t.mu.Unlock()
	if !first {
		return nil
	}
	defer func() {
		t.mu.Lock()
		t.firstLeft = false
		t.mu.Unlock()
	}()
	// The probe is Warden's own request: it must not mark the call whose
	// request triggered it as sent.
	post := postRequest(req.WithContext(WithCall(req.Context(), nil)))
	resp, err := t.send(post.WithContext(withResumeProbe(post.Context())), probeBody)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusNotFound, http.StatusUnauthorized, http.StatusForbidden:
	default:
		return nil
	}
	t.log.Info("resumed upstream session is gone; initializing a fresh one", "status", resp.StatusCode)
	t.event(SessionExpired)
	t.forgetRecord()
	if err := t.reinitialize(post); err != nil {
		// No session is left to carry requests (the fresh initialize was
		// refused for want of a login, or did not get through): the next
		// ones are answered as on a gone session, which ends the SDK's
		// connection, and the supervisor starts over (waiting for the
		// login when one is needed).
		t.mu.Lock()
		t.failed = &failure{status: http.StatusNotFound, header: http.Header{}}
		t.mu.Unlock()
		return err
	}
	return nil
}

// send posts body on the live session.
func (t *sessionTransport) send(req *http.Request, body []byte) (*http.Response, error) {
	r := req.Clone(req.Context())
	if body != nil {
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	t.setSession(r)
	return t.headerTransport.RoundTrip(r)
}

// initialize answers the SDK's initialize from a stored session when there
// is one for this URL, and otherwise initializes and stores the new session.
func (t *sessionTransport) initialize(req *http.Request, body []byte, id json.RawMessage) (*http.Response, error) {
	t.mu.Lock()
	t.initBody = body
	t.session, t.resumed, t.firstLeft, t.failed = "", false, false, nil
	t.mu.Unlock()
	if t.store != nil {
		if rec, ok := t.store.Load(t.cfg.Name, t.cfg.Fingerprint()); ok {
			t.mu.Lock()
			t.session, t.resumed, t.firstLeft = rec.SessionID, true, true
			t.mu.Unlock()
			t.store.MarkResumed(t.cfg.Name)
			t.event(SessionResumed)
			t.log.Info("resuming stored upstream session", "protocol", rec.ProtocolVersion)
			answer, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "result": rec.InitResult})
			h := http.Header{"Content-Type": {"application/json"}, "Mcp-Session-Id": {rec.SessionID}}
			return localResponse(req, http.StatusOK, h, answer), nil
		}
	}
	resp, _, err := t.doInitialize(req, body)
	if err == nil {
		t.event(SessionFresh)
	}
	return resp, err
}

// doInitialize sends an initialize, records the session it opens, and
// returns the answer (buffered, so its body can be read again).
func (t *sessionTransport) doInitialize(req *http.Request, body []byte) (*http.Response, []byte, error) {
	resp, err := t.send(req, body)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(raw))
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		return resp, raw, nil // stateless or refused: nothing to keep
	}
	result, version := initResult(raw, resp.Header.Get("Content-Type"))
	t.mu.Lock()
	t.session = sid
	t.mu.Unlock()
	if t.store != nil && result != nil {
		now := time.Now().UTC()
		rec := sessions.Record{Server: t.cfg.Name, Fingerprint: t.cfg.Fingerprint(), SessionID: sid,
			ProtocolVersion: version, InitResult: result, Created: now, LastUsed: now}
		if err := t.store.Save(rec, "fresh"); err != nil {
			t.log.Warn("storing upstream session failed", "err", err)
		}
	}
	return resp, raw, nil
}

// reinitialize replaces an expired resumed session: one fresh initialize
// (with the live config's headers) and its initialized notification. A
// refusal is kept and answered to every request, as the upstream gave it.
func (t *sessionTransport) reinitialize(post *http.Request) error {
	t.mu.Lock()
	initBody := t.initBody
	t.session = ""
	t.mu.Unlock()
	resp, raw, err := t.doInitialize(post, initBody)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		t.mu.Lock()
		t.failed = &failure{status: resp.StatusCode, header: resp.Header.Clone(), body: raw}
		t.mu.Unlock()
		return nil
	}
	t.event(SessionReinitialized)
	note := []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if r, err := t.send(post, note); err == nil {
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	return nil
}

// postRequest is a POST like req (which may be the GET stream).
func postRequest(req *http.Request) *http.Request {
	post := req.Clone(req.Context())
	post.Method = http.MethodPost
	post.Header.Set("Content-Type", "application/json")
	post.Header.Set("Accept", "application/json, text/event-stream")
	return post
}

// EndStoredSession ends a stored session upstream with a best-effort
// DELETE built from the server's last live config (used when the server is
// removed while not connected).
func EndStoredSession(ctx context.Context, cfg *config.Server, store SessionStore, log *slog.Logger) {
	if store == nil {
		return
	}
	rec, ok := store.Load(cfg.Name, cfg.Fingerprint())
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, cfg.URL, nil)
	if err == nil {
		req.Header.Set("Mcp-Session-Id", rec.SessionID)
		req.Header.Set("Mcp-Protocol-Version", rec.ProtocolVersion)
		if resp, err := newHeaderTransport(cfg.Headers).RoundTrip(req); err == nil {
			resp.Body.Close()
		} else {
			log.Info("ending upstream session failed; left to expire", "err", err)
		}
	}
	_ = store.Delete(cfg.Name)
}

func readBody(req *http.Request) ([]byte, error) {
	if req.Body == nil {
		return nil, nil
	}
	defer req.Body.Close()
	return io.ReadAll(req.Body)
}

// peekMethod reads a JSON-RPC message's method and id.
func peekMethod(body []byte) (method string, id json.RawMessage) {
	var m struct {
		Method string          `json:"method"`
		ID     json.RawMessage `json:"id"`
	}
	_ = json.Unmarshal(body, &m)
	return m.Method, m.ID
}

// initResult extracts the initialize result from a JSON or SSE answer.
func initResult(raw []byte, contentType string) (json.RawMessage, string) {
	var result json.RawMessage
	take := func(msg []byte) bool {
		var r struct {
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal(msg, &r) == nil && len(r.Result) > 0 {
			result = r.Result
		}
		return result != nil
	}
	if strings.HasPrefix(contentType, "text/event-stream") {
		_ = scanEvents(bytes.NewReader(raw), nil, func(_ string, data []byte) bool { return take(data) })
	} else {
		take(raw)
	}
	if result == nil {
		return nil, ""
	}
	var v struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	_ = json.Unmarshal(result, &v)
	return result, v.ProtocolVersion
}

func localResponse(req *http.Request, code int, h http.Header, body []byte) *http.Response {
	if h == nil {
		h = http.Header{}
	}
	return &http.Response{
		StatusCode: code, Status: fmt.Sprintf("%d %s", code, http.StatusText(code)),
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)),
		Request: req,
	}
}
