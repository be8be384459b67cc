package surface

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/callers"
)

// Known callers (package callers): with a policy set, ServeHTTP answers a
// request without a valid bearer token 401, and each view shows and calls,
// for the request's caller, only the tools its profiles allow. The views'
// lists stay shared; each request's answer is filtered on top of them.

// callerHeader carries who a request's token named, as JSON, from
// ServeHTTP (which alone sets it; a client's own is dropped) to where the
// SDK hands on the request's header: the views' handlers.
const callerHeader = "Warden-Caller"

// SetCallers sets the known callers for requests from now on; nil: none,
// anyone who reaches the port may use every approved tool. When that
// changes what callers may see, live sessions are told to list the tools
// again.
func (s *Surfaces) SetCallers(p *callers.Policy) {
	for {
		old := s.policy.Load()
		if old.Equal(p) {
			return // the same: keep the one whose identity provider's keys are known
		}
		if s.policy.CompareAndSwap(old, p) {
			break
		}
	}
	for _, v := range s.allViews() {
		v.relist()
	}
}

// Callers is the known callers of requests now; nil: none.
func (s *Surfaces) Callers() *callers.Policy { return s.policy.Load() }

// relist tells the view's sessions that the tools changed (the SDK sends
// list_changed when its server's tools do): one tool it holds is held
// again, as it is. The search view's own two tools are the same for
// every caller.
func (v *view) relist() {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.index != nil {
		return
	}
	for _, def := range v.defs {
		_ = addTool(v.srv, v.held(def)) // held before: it is valid
		return
	}
}

// authenticate resolves r's caller into callerHeader, or answers r 401
// with WWW-Authenticate saying what is wrong and reports false. The token
// goes no further than here.
func (s *Surfaces) authenticate(w http.ResponseWriter, r *http.Request) bool {
	if _, sent := r.Header[callerHeader]; sent {
		r.Header.Del(callerHeader)
	}
	p := s.policy.Load()
	if p == nil {
		return true
	}
	c, err := p.Authenticate(r)
	if err != nil {
		var ref *callers.Refused
		if errors.As(err, &ref) {
			w.Header().Set("WWW-Authenticate", ref.Challenge())
		}
		Refuse(w, r, http.StatusUnauthorized, "not authenticated: "+err.Error())
		return false
	}
	r.Header.Del("Authorization")
	b, _ := json.Marshal(c.Identity) // strings only: it cannot fail
	r.Header.Set(callerHeader, string(b))
	return true
}

// headerOf is the header of the request extra came with.
func headerOf(extra *mcp.RequestExtra) http.Header {
	if extra == nil {
		return nil
	}
	return extra.Header
}

// own records the caller of session id's initialize, with header h, as
// the session's owner.
func (v *view) own(id string, h http.Header) {
	owner := v.callerOf(h).Name()
	if id == "" || owner == "" {
		return
	}
	v.sessMu.Lock()
	l := v.sessions[id]
	if l == nil {
		l = newLive() // tracked once initialized
		v.sessions[id] = l
	}
	v.sessMu.Unlock()
	l.mu.Lock()
	l.owner = owner
	l.mu.Unlock()
}

// ownedBy reports whether the request with header h, on session l, comes
// from the caller who began it (a session begun by no known caller is
// anyone's): a session id that leaks is no way into another's calls.
func (v *view) ownedBy(l *live, h http.Header) bool {
	l.mu.Lock()
	owner := l.owner
	l.mu.Unlock()
	return owner == "" || owner == v.callerOf(h).Name()
}

// callerOf is the caller of a request with header h: who authenticate
// found, with what the policy now gives them. Without a policy, anyone,
// unlimited; with one but no caller found (the policy came meanwhile),
// no one, allowed nothing.
func (v *view) callerOf(h http.Header) callers.Caller {
	var p *callers.Policy
	if v.policy != nil {
		p = v.policy.Load()
	}
	if p == nil {
		return callers.Caller{}
	}
	var id callers.Identity
	if raw := h.Get(callerHeader); raw == "" || json.Unmarshal([]byte(raw), &id) != nil {
		return callers.Caller{Profile: &callers.Profile{}}
	}
	return callers.Caller{Identity: id, Profile: p.Profile(id)}
}

// permitServer refuses the request of a caller whose profiles allow
// nothing of server, as the error it is answered with.
func (v *view) permitServer(extra *mcp.RequestExtra, server string) error {
	who := v.callerOf(headerOf(extra))
	if who.Profile.AllowsServer(server) {
		return nil
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
		Message: fmt.Sprintf("NOT_PERMITTED: server %q is outside what %s may use (%s). %s", server, who, who.Profile, callers.Help)}
}

// withoutServers leaves out of a prompts or resources list those of the
// servers the request's caller may not use.
func (v *view) withoutServers(req mcp.Request, res mcp.Result) {
	p := v.callerOf(headerOf(req.GetExtra())).Profile
	if p == nil {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	resource := func(uri string) bool { s, ok := v.resources[uri]; return !ok || !p.AllowsServer(s) }
	switch list := res.(type) {
	case *mcp.ListPromptsResult:
		list.Prompts = slices.DeleteFunc(list.Prompts, func(x *mcp.Prompt) bool { r, ok := v.prompts[x.Name]; return !ok || !p.AllowsServer(r.server) })
	case *mcp.ListResourcesResult:
		list.Resources = slices.DeleteFunc(list.Resources, func(x *mcp.Resource) bool { return resource(x.URI) })
	case *mcp.ListResourceTemplatesResult:
		list.ResourceTemplates = slices.DeleteFunc(list.ResourceTemplates, func(x *mcp.ResourceTemplate) bool { return resource(x.URITemplate) })
	}
}

// allowedLocked reports whether profile allows the tool the view lists as
// name (one the view does not know: no). Caller holds v.mu.
func (v *view) allowedLocked(name string, profile *callers.Profile) bool {
	t, ok := v.tools[name]
	return ok && profile.Allows(t.server, t.name, t.class)
}

// ServeMetadata answers GET callers.MetadataPath, without a token: the
// protected resource metadata (RFC 9728) of the known callers, or 404
// when no identity provider gives tokens for Warden.
func (s *Surfaces) ServeMetadata(w http.ResponseWriter, _ *http.Request) {
	m := s.policy.Load().Metadata()
	if m == nil {
		http.Error(w, `Warden has no identity provider ("auth" in its config)`, http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "max-age=60")
	_ = json.NewEncoder(w).Encode(m)
}
