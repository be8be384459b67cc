package surface

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/wardenmcp/warden/protocol"
)

// Refusals on the MCP endpoints. A request refused with an HTTP status
// alone reaches an SDK client as "calling "initialize": Bad Request": a
// POST, which is JSON-RPC, is answered with the status and a JSON-RPC
// error that says why, under the id of each request it carries. The one
// exception is the SDK's 404 for a session it does not know: a client
// learns that its session is gone (and starts a new one) from exactly that,
// a 404 without a JSON-RPC error.

// IsMCP reports whether r is for an MCP endpoint (/mcp, /mcp/{server}).
func IsMCP(r *http.Request) bool {
	return r.URL.Path == "/mcp" || strings.HasPrefix(r.URL.Path, "/mcp/")
}

// Refuse answers r, which goes no further, refused with status for why:
// a POST as JSON-RPC (see above), reading its body (at most maxBody
// bytes) for the ids; any other request with text.
func Refuse(w http.ResponseWriter, r *http.Request, status int, why string) {
	var body []byte
	if r.Method == http.MethodPost {
		body, _ = readBody(r)
	}
	refuseRequest(w, r, status, body, why)
}

// RefuseUnread is Refuse without reading r's body, for a refusal that must
// not wait for a body: Warden is busy. A POST's answer has a null id, which
// an SDK client does not read (it shows the status).
func RefuseUnread(w http.ResponseWriter, r *http.Request, status int, why string) {
	refuseRequest(w, r, status, nil, why)
}

func refuseRequest(w http.ResponseWriter, r *http.Request, status int, body []byte, why string) {
	if r.Method != http.MethodPost {
		http.Error(w, why, status)
		return
	}
	refuse(w, status, body, why)
}

// refuse answers a POST of body (cut short or not) with status and the
// JSON-RPC errors for why: invalid request for a 4xx status, a server
// error for a 5xx.
func refuse(w http.ResponseWriter, status int, body []byte, why string) {
	code := int64(jsonrpc.CodeInvalidRequest)
	if status >= 500 {
		code = protocol.CodeServerError
	}
	answers, batched := protocol.Refusals(body, code, why)
	writeAnswers(w, status, answers, batched)
}

// writeAnswers sends JSON-RPC error answers with status.
func writeAnswers(w http.ResponseWriter, status int, answers []protocol.ErrorReply, batched bool) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(protocol.EncodeReplies(answers, batched))
}

// toSDK serves r with the SDK's handler h. A POST goes to it only once
// checked (checkPOST), its refusals sent as JSON-RPC (rpcErrors).
func toSDK(h http.Handler, w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		h.ServeHTTP(w, r)
		return
	}
	body, ok := checkPOST(w, r)
	if !ok {
		return
	}
	rw := &rpcErrors{ResponseWriter: w, body: body, session: r.Header.Get("Mcp-Session-Id") != ""}
	defer named(r)()
	h.ServeHTTP(rw, r)
	rw.finish()
}

// checkPOST reads a POST's body for the SDK and refuses, saying why in
// JSON-RPC, one it must not have: too large; no JSON-RPC message (the
// SDK's "malformed payload" says neither which message nor its id; and
// some it takes without a word); a request, or a batch holding one, with a
// numeric id the SDK would answer under another. The body read is put back
// for the SDK.
func checkPOST(w http.ResponseWriter, r *http.Request) (body []byte, ok bool) {
	body, err := readBody(r)
	r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), r.Body))
	switch {
	case err != nil:
		refuse(w, http.StatusBadRequest, body, "reading the request: "+err.Error())
		return nil, false
	case len(body) > maxBody:
		refuse(w, http.StatusRequestEntityTooLarge, body, tooLarge)
		return nil, false
	}
	if answers, batched := protocol.Check(body); answers != nil {
		writeAnswers(w, http.StatusBadRequest, answers, batched)
		return nil, false
	}
	if id, inexact := inexactID(body); inexact {
		refuse(w, http.StatusBadRequest, nil, fmt.Sprintf("Invalid Request: id %s is a number the gateway cannot answer under exactly; send a string id, or a whole number of at most 2^53 in size", id))
		return nil, false
	}
	return body, true
}

// tooLarge says why a request body is refused.
var tooLarge = fmt.Sprintf("the request is larger than %d MiB, more than Warden takes; send less at once", maxBody>>20)

// rpcErrors is the response writer of a POST served by the SDK's handler:
// a refusal it writes as text (http.Error) is sent as JSON-RPC instead,
// with the same status and its text as the reason. Everything else passes
// through as it is written.
type rpcErrors struct {
	http.ResponseWriter
	body    []byte // the request's
	session bool   // the request named a session: its 404 stays as it is

	held int          // the status of a refusal held to be sent as JSON-RPC
	text bytes.Buffer // its text
}

func (w *rpcErrors) WriteHeader(status int) {
	if status >= 400 && strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") && !(status == http.StatusNotFound && w.session) {
		w.held = status
		return
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *rpcErrors) Write(b []byte) (int, error) {
	if w.held != 0 {
		if w.text.Len() < 4096 {
			w.text.Write(b)
		}
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

// Flush passes a stream's events on; a held refusal waits for finish.
func (w *rpcErrors) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok && w.held == 0 {
		f.Flush()
	}
}

// Unwrap is for http.ResponseController (deadlines).
func (w *rpcErrors) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// finish sends the refusal held, if any, once the handler returned.
func (w *rpcErrors) finish() {
	if w.held != 0 {
		w.Header().Del("X-Content-Type-Options")
		refuse(w.ResponseWriter, w.held, w.body, strings.TrimSpace(w.text.String()))
	}
}
