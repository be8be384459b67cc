package surface

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/answer"
	"github.com/wardenmcp/warden/gateway"
	"github.com/wardenmcp/warden/protocol"
)

// The fast path for a stateless-era tools/call. The SDK's stateless handler
// builds a session for each request and decodes the request about ten
// times over, each time with a fresh 32 KiB buffer: a 2026-07-28 client's
// call cost three times a 2025 one's. A call whose every header and _meta
// field is as a well-behaved client sends them is served here instead, on
// the same call path, rounds and policy. Anything else (a field missing or
// odd, a log level or progress token asked for, a tool that binds its
// arguments to headers) goes to the SDK's handler, whose checks and answers
// are the reference: the fast path only takes what it would accept.

// statelessCall is a stateless-era tools/call, decoded in one pass.
type statelessCall struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  struct {
		mcp.CallToolParamsRaw
		Meta map[string]json.RawMessage `json:"_meta"` // read first; then into the embedded Meta
	} `json:"params"`
}

// serveStatelessFast serves body, a stateless-era POST with
// statelessHeaders, if it belongs to the fast path, reporting whether it
// did.
func (v *view) serveStatelessFast(w http.ResponseWriter, r *http.Request, body []byte) bool {
	if len(body) == 0 || body[0] != '{' {
		return false
	}
	var m statelessCall
	if json.Unmarshal(body, &m) != nil || m.JSONRPC != "2.0" || m.Method != "tools/call" || !validID(m.ID) ||
		!spelledAsSDK(body, "name", "arguments", "_meta", "inputResponses", "requestState") {
		return false
	}
	p := &m.Params.CallToolParamsRaw
	if p.Name == "" || r.Header.Get("Mcp-Name") != p.Name || v.bindsHeaders(p.Name) || v.taskable(p.Name, p.Arguments) {
		return false
	}
	for k := range r.Header {
		if strings.HasPrefix(k, "Mcp-Param-") {
			return false
		}
	}
	caps, hop, ok := statelessMeta(m.Params.Meta)
	if !ok {
		return false
	}
	meta := make(mcp.Meta, len(m.Params.Meta))
	for k, raw := range m.Params.Meta {
		if val, ok := hop[k]; ok {
			meta[k] = val
			continue
		}
		var val any
		if json.Unmarshal(raw, &val) != nil {
			return false
		}
		meta[k] = val
	}
	p.Meta = meta

	st := &stream{w: w}
	sent := &answer.After{}
	defer sent.Run() // once the answer is sent
	res, typ, err := v.callRounds(r.Context(), statelessClient{st, caps}, p, sent, v.originOf(r.Header, nil, p.Meta))
	if err == nil {
		var ok reply
		if ok, err = v.statelessReply(m.ID, res, typ); err == nil {
			st.finish(ok)
			return true
		}
	}
	st.status = errorStatus(err)
	st.finish(replyTo(m.ID, nil, err))
	return true
}

// statelessReply is the answer to id with res, as the SDK's server sends a
// stateless-era client a result: saying its result type typ, and naming the
// server in _meta unless it names one already (SEP-2575). A result as the
// upstream sent it is passed on with both written in (see statelessPieces);
// another is decoded and encoded again (for a plain call, that had been a
// fifth of Warden's CPU).
func (v *view) statelessReply(id json.RawMessage, res *answer.Result, typ string) (reply, error) {
	if pieces, ok := v.statelessPieces(res.Raw, typ); ok {
		return resultReply(id, pieces...), nil
	}
	d, err := res.Tool()
	if err != nil {
		return nil, err
	}
	if d, err = withResultType(d, typ); err != nil {
		return nil, err
	}
	meta := d.GetMeta()
	if meta == nil {
		meta = map[string]any{}
	}
	if _, ok := meta[mcp.MetaKeyServerInfo]; !ok {
		meta[mcp.MetaKeyServerInfo] = v.info
		d.SetMeta(meta)
	}
	b, err := json.Marshal(d)
	return resultReply(id, b), err
}

// statelessPieces is raw, a result as the upstream sent it, in pieces with
// its result type typ and the server named in _meta: written over the
// result's own resultType, into its _meta, or after its members where it
// has none. ok is false for a result to decode instead: not an object, or
// with _meta or resultType twice or in other capitals (which decoders read
// differently), a _meta that is not an object or that names a server.
func (v *view) statelessPieces(raw []byte, typ string) (pieces [][]byte, ok bool) {
	if len(raw) < 2 || raw[len(raw)-1] != '}' {
		return nil, false
	}
	var meta, rtype answer.Span
	metas, rtypes, odd := 0, 0, false
	if !answer.EachMember(raw, func(k []byte, s answer.Span) {
		switch {
		case bytes.EqualFold(k, []byte("_meta")):
			meta, metas, odd = s, metas+1, odd || string(k) != "_meta"
		case bytes.EqualFold(k, []byte("resultType")):
			rtype, rtypes, odd = s, rtypes+1, odd || string(k) != "resultType"
		}
	}) || odd || metas > 1 || rtypes > 1 {
		return nil, false
	}
	named := `"` + mcp.MetaKeyServerInfo + `":` + string(v.info)
	typed := `"` + typ + `"`
	type edit struct {
		at, end int // raw[at:end] is replaced
		with    string
	}
	var edits []edit
	var after []string // members written after the result's own
	if metas == 0 {
		after = append(after, `"_meta":{`+named+`}`)
	} else {
		m := raw[meta.Value:meta.End]
		members := 0
		if !answer.EachMember(m, func(k []byte, _ answer.Span) {
			members++
			odd = odd || string(k) == mcp.MetaKeyServerInfo
		}) || odd {
			return nil, false
		}
		if members > 0 {
			named += ","
		}
		edits = append(edits, edit{meta.Value + 1, meta.Value + 1, named})
	}
	if rtypes == 0 {
		after = append(after, `"resultType":`+typed)
	} else {
		edits = append(edits, edit{rtype.Value, rtype.End, typed})
	}
	if len(edits) == 2 && edits[1].at < edits[0].at {
		edits[0], edits[1] = edits[1], edits[0]
	}
	at := 0
	for _, e := range edits {
		pieces = append(pieces, raw[at:e.at], []byte(e.with))
		at = e.end
	}
	end := len(raw) - 1
	tail := strings.Join(after, ",") + "}"
	if len(after) > 0 && len(bytes.TrimRight(raw[:end], " \t\r\n")) > 1 {
		tail = "," + tail
	}
	return append(pieces, raw[at:end], []byte(tail)), true
}

// errorStatus is the HTTP status the stateless era gives an error answer:
// 404 for an unknown method, 400 for invalid params, an unsupported
// protocol version or a capability the client lacks (SEP-2575), else 200.
func errorStatus(err error) int {
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) {
		return 0
	}
	switch werr.Code {
	case jsonrpc.CodeMethodNotFound:
		return http.StatusNotFound
	case jsonrpc.CodeInvalidParams, mcp.CodeUnsupportedProtocolVersion, mcp.CodeMissingRequiredClientCapabilities:
		return http.StatusBadRequest
	}
	return 0
}

// statelessMeta checks a call's _meta as the SDK's stateless handler
// would take it without a word, and returns the client's capabilities and
// the hop keys' values decoded (shared, not to be changed): the protocol
// version as in the header, the capabilities an object, the client's info
// (if given) an object; and no log level or progress token (the SDK sends
// log messages and progress to such a client; the fast path leaves that to
// it).
func statelessMeta(meta map[string]json.RawMessage) (*mcp.ClientCapabilities, map[string]any, bool) {
	if _, ok := meta[mcp.MetaKeyLogLevel]; ok {
		return nil, nil, false
	}
	if _, ok := meta["progressToken"]; ok {
		return nil, nil, false
	}
	r := hopReadings.read(meta)
	if r == nil {
		return nil, nil, false
	}
	caps := r.caps // a copy: the reading is shared
	return &caps, r.values, true
}

// readHop reads a call's hop keys as statelessMeta checks them; nil if
// the fast path cannot take them.
func readHop(meta map[string]json.RawMessage) *hopReading {
	r := &hopReading{values: map[string]any{}}
	for _, k := range hopKeys {
		if raw, ok := meta[k]; ok {
			var val any
			if json.Unmarshal(raw, &val) != nil {
				return nil
			}
			r.values[k] = val
		}
	}
	if version, _ := r.values[mcp.MetaKeyProtocolVersion].(string); version != protocol.StatelessSince {
		return nil
	}
	if info, ok := meta[mcp.MetaKeyClientInfo]; ok {
		var impl mcp.Implementation
		if !isObject(info) || !caseSafe(r.values[mcp.MetaKeyClientInfo]) || json.Unmarshal(info, &impl) != nil {
			return nil
		}
	}
	raw := meta[mcp.MetaKeyClientCapabilities]
	// As the SDK reads them: roots at the top level are the 2026 form.
	var c struct {
		mcp.ClientCapabilities
		Roots *mcp.RootCapabilities `json:"roots,omitempty"`
	}
	if !isObject(raw) || !caseSafe(r.values[mcp.MetaKeyClientCapabilities]) || json.Unmarshal(raw, &c) != nil {
		return nil
	}
	r.caps = c.ClientCapabilities
	r.caps.RootsV2 = c.Roots
	if c.Roots != nil {
		r.caps.Roots = *c.Roots
	}
	return r
}

// caseSafe reports whether no object key in v (JSON decoded), at any
// depth, is a case variant of a field name of the client's capabilities or
// info: Go's decoder takes "Elicitation" for "elicitation", the SDK's does
// not read _meta's values so.
func caseSafe(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			for _, name := range metaFieldNames {
				if k != name && strings.EqualFold(k, name) {
					return false
				}
			}
			if !caseSafe(val) {
				return false
			}
		}
	case []any:
		for _, e := range x {
			if !caseSafe(e) {
				return false
			}
		}
	}
	return true
}

// metaFieldNames are the JSON names of the fields of the types a
// stateless-era client's capabilities and info decode into.
var metaFieldNames = jsonNames(reflect.TypeFor[mcp.ClientCapabilities](), reflect.TypeFor[mcp.Implementation]())

// jsonNames collects the JSON names of the fields of types and of the
// types they hold.
func jsonNames(types ...reflect.Type) []string {
	var names []string
	seen := map[reflect.Type]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || seen[t] {
			return
		}
		seen[t] = true
		for f := range t.Fields() {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" {
				name = f.Name
			}
			if name != "-" && !(f.Anonymous && f.Tag.Get("json") == "") {
				names = append(names, name)
			}
			walk(f.Type)
		}
	}
	for _, t := range types {
		walk(t)
	}
	return names
}

func isObject(raw json.RawMessage) bool {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	return len(raw) > 0 && raw[0] == '{'
}

// bindsHeaders reports whether the view's tool name has arguments bound to
// request headers (x-mcp-header), which the SDK checks against the call.
func (v *view) bindsHeaders(name string) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return headerBound(v.listed["tool:"+name])
}

// headerBound reports whether def, a tool's definition as listed, binds
// arguments to headers: such a tool is the SDK's to check (its view's SDK
// server holds it whole, and its calls take the SDK's path).
func headerBound(def []byte) bool { return bytes.Contains(def, []byte("x-mcp-header")) }

// statelessClient is a stateless-era request's client, as its rounds see
// it: what it can answer is what its request says, and it is never asked
// on its stream (its questions go out as input required).
type statelessClient struct {
	*stream
	caps *mcp.ClientCapabilities
}

func (c statelessClient) Capabilities() *mcp.ClientCapabilities { return c.caps }

func (c statelessClient) Ask(context.Context, string, mcp.InputRequest) (mcp.InputResponse, error) {
	return nil, errors.New("a stateless-era client is asked through rounds")
}

// Log drops the message: the request asked for no log level (see
// statelessMeta), and so the SDK would send none.
func (c statelessClient) Log(context.Context, *mcp.LoggingMessageParams) {}

var _ gateway.Client = statelessClient{}
