// Package surface shows the gateway to MCP clients over streamable HTTP: the
// aggregated endpoint /mcp, where every server's tools and prompts are named
// "<server>__<name>", and one endpoint per server, /mcp/{server}, with names
// unchanged. Each endpoint is an SDK server whose lists mirror what the
// gateway lets clients see; every tools/call goes to the gateway's one call
// path, and other requests are forwarded to the owning upstream.
package surface

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/answer"
	"github.com/wardenmcp/warden/callers"
	"github.com/wardenmcp/warden/gateway"
	"github.com/wardenmcp/warden/internal/canon"
	"github.com/wardenmcp/warden/search"
	"github.com/wardenmcp/warden/store"
	"github.com/wardenmcp/warden/writes"
)

// ref is an upstream object behind an exposed name; a tool's with its
// write class.
type ref struct {
	server, name string
	class        writes.Class
}

// view is one endpoint: the aggregated one (single == "") or one server's.
type view struct {
	g       *gateway.Gateway
	single  string
	surface string // "mcp" or "mcp/<server>": recorded with each call
	srv     *mcp.Server
	impl    *mcp.Implementation // srv's
	info    json.RawMessage     // impl encoded, which stateless-era results name (fast_stateless.go)
	log     *slog.Logger
	// policy is the surfaces' known callers (callers.go); nil in tests of
	// a view alone.
	policy *atomic.Pointer[callers.Policy]

	mu        sync.Mutex
	tools     map[string]ref       // exposed name → tool, listed or not (for refusals)
	contested map[string]string    // exposed name two tools of a server map to (neither's) → server
	listed    map[string][]byte    // "kind:name" → definition now listed
	defs      map[string]*mcp.Tool // exposed name → the listed tool (see show)
	toolsJSON []byte               // tools/list result, built on demand from listed (toolList)
	prompts   map[string]ref
	resources map[string]string // URI or URI template → server
	byServer  map[string]*exposed
	index     *search.Index // the search view's tools, instead of tools/list
	// toolSearch is the surfaces' setting, whose Rerank the search view
	// follows; nil elsewhere.
	toolSearch *atomic.Pointer[ToolSearch]
	rounds     *rounds     // stateless-era calls between their rounds
	tasks      *taskRunner // SetTasks's, set before serving; nil: no tasks

	sessMu   sync.Mutex
	sessions map[string]*live // initialized downstream sessions by id
	st       store.Store      // where sessions are shared (shared.go); nil: not shared
	adoptMu  sync.Mutex       // one adoption at a time

	// Resource updates wait in a queue of at most maxQueued, sent by one
	// goroutine: the SDK writes each to every subscriber in turn, and a
	// client that does not read must not hold up the upstream.
	updates chan resourceUpdate
	updater sync.Once
	gone    chan struct{} // closed when the view is forgotten
}

type resourceUpdate struct {
	server string
	p      *mcp.ResourceUpdatedNotificationParams
}

// exposed is what one server currently contributes to a view.
type exposed struct {
	tools, listed, prompts, resources, templates []string // listed: the visible tools
	contested                                    []string
}

func newView(g *gateway.Gateway, single string, log *slog.Logger, version string) *view {
	v := &view{
		g: g, single: single, surface: "mcp", log: log,
		tools: map[string]ref{}, contested: map[string]string{}, listed: map[string][]byte{}, defs: map[string]*mcp.Tool{}, prompts: map[string]ref{},
		resources: map[string]string{}, byServer: map[string]*exposed{},
		sessions: map[string]*live{}, rounds: newRounds(),
		updates: make(chan resourceUpdate, maxQueued), gone: make(chan struct{}),
	}
	if single != "" {
		v.surface = "mcp/" + single
	}
	v.log = log.With("endpoint", "/"+v.surface)
	v.impl = &mcp.Implementation{Name: "warden", Title: "Warden MCP gateway", Version: version}
	v.info, _ = json.Marshal(v.impl) // strings only: it cannot fail
	v.srv = mcp.NewServer(v.impl, &mcp.ServerOptions{
		Logger:                    sdkLog(log, "/"+v.surface),
		HasTools:                  true,
		HasPrompts:                true,
		HasResources:              true,
		CompletionHandler:         v.complete,
		SubscribeHandler:          v.subscribe,
		UnsubscribeHandler:        v.unsubscribe,
		SupportedProtocolVersions: protocolVersions,
		InitializedHandler:        func(_ context.Context, r *mcp.InitializedRequest) { v.track(r.Session) },
		GetSessionID:              v.newSessionID,
		// The SDK's default (logging) and the tasks extension (tasks.go).
		Capabilities: &mcp.ServerCapabilities{Logging: &mcp.LoggingCapabilities{},
			Extensions: map[string]any{tasksExtension: map[string]any{}}},
	})
	addTaskMethods(v.srv)
	v.srv.AddReceivingMiddleware(v.intercept)
	return v
}

// name is how a server's tool or prompt is called on this view.
func (v *view) name(server, name string) string {
	if v.single != "" {
		return name
	}
	return Join(server, name)
}

func (v *view) servers() []string {
	if v.single != "" {
		return []string{v.single}
	}
	return v.g.Servers()
}

// intercept sends every tools/call to the gateway (so unlisted tools get
// Warden's refusal, not "unknown tool"), puts the tools' definitions in
// tools/list (see standIn), and passes logging/setLevel on to the
// upstreams.
func (v *view) intercept(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if ss, ok := req.GetSession().(*mcp.ServerSession); ok {
			v.liveFor(ss).use(method)
		}
		switch r := req.(type) {
		case *mcp.CallToolRequest:
			return v.callTool(ctx, r)
		case *mcp.ServerRequest[*taskParams]:
			return v.serveTask(ctx, method, r)
		case *mcp.ListToolsRequest:
			res, err := next(ctx, method, req)
			if list, ok := res.(*mcp.ListToolsResult); ok && list != nil {
				v.withDefinitions(list, v.callerOf(headerOf(r.Extra)).Profile)
				if hasExecution(list.Tools) {
					return toolsListed{list}, err
				}
			}
			return res, err
		case *mcp.ListPromptsRequest, *mcp.ListResourcesRequest, *mcp.ListResourceTemplatesRequest:
			res, err := next(ctx, method, req)
			if err == nil && res != nil {
				v.withoutServers(req, res)
			}
			return res, err
		case *mcp.ServerRequest[*mcp.InitializeParams]:
			res, err := next(ctx, method, req)
			if err == nil {
				v.own(r.Session.ID(), headerOf(r.Extra))
				// Before the client goes on, maybe on another instance
				// or after a restart.
				v.saveSession(r.Session, "")
				if v.st != nil {
					v.track(r.Session) // its initialized notification may go elsewhere
				}
			}
			return res, err
		case *mcp.ServerRequest[*mcp.SetLoggingLevelParams]:
			v.g.SetLogLevel(ctx, v.servers(), r.Params.Level)
			if l := v.liveFor(r.Session); l != nil {
				l.setLevel(r.Params.Level)
				v.saveSession(r.Session, r.Params.Level)
			}
		}
		return next(ctx, method, req)
	}
}

func (v *view) callTool(ctx context.Context, r *mcp.CallToolRequest) (mcp.Result, error) {
	ctx, cancel := untilGone(ctx, headerOf(r.Extra))
	defer cancel()
	// A large answer holds its room in the answers' bound until decoded
	// for the SDK (which sends it after this returns).
	after := &answer.After{}
	defer after.Run()
	from := v.originOf(headerOf(r.Extra), r.Session, r.Params.Meta)
	if here, stateless := sessionClient(r.Session); stateless {
		if res, handled, err := v.taskCall(ctx, r, from); handled {
			return res, err
		}
		res, typ, err := v.callRounds(ctx, here, r.Params, after, from)
		if err != nil {
			return nil, err
		}
		d, err := res.Tool()
		if err != nil {
			return nil, err
		}
		return withResultType(d, typ)
	}
	res, err := v.call(ctx, r.Params, gateway.SessionClient{ServerSession: r.Session}, after, from)
	if err != nil {
		return nil, err
	}
	return res.Tool()
}

// call runs a tools/call of this view through the gateway: both the SDK
// server's path and the fast path come here.
func (v *view) call(ctx context.Context, p *mcp.CallToolParamsRaw, client gateway.Client, after *answer.After, from origin) (*answer.Result, error) {
	if v.index != nil {
		res, inner, err := v.searchCall(ctx, p, client, from.who.Profile)
		if res != nil || err != nil {
			return res, err
		}
		p = inner
	}
	t, err := v.target(p.Name)
	if err != nil {
		return nil, err
	}
	_, rounds := client.(roundClient) // a stateless-era client's
	return v.g.CallTool(ctx, gateway.Call{
		Server: t.server, Tool: t.name, Args: p.Arguments, Meta: hopMeta(p.Meta), Surface: from.surface, Client: client, Caller: from.caller, Who: from.who,
		PerRequest: rounds, Answers: p.InputResponses, After: after,
	})
}

// target is the tool a tools/call of this view names (the search view's
// own aside).
func (v *view) target(name string) (ref, error) {
	v.mu.Lock()
	t, ok := v.tools[name]
	contested, isContested := v.contested[name]
	v.mu.Unlock()
	if isContested {
		return ref{}, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("tool name %q stands for two tools of server %q, so for neither; see them with: warden tools %s", name, contested, contested)}
	}
	if !ok {
		if t, ok = v.resolve(name); !ok {
			return ref{}, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q", name)}
		}
	}
	return t, nil
}

// resolve finds the tool a name not (yet) in the lists means, for the
// gateway to judge: the lists follow a server's connection a moment later,
// and a call must not fail for that.
func (v *view) resolve(name string) (ref, bool) {
	if v.single != "" {
		return ref{server: v.single, name: name}, true
	}
	// Server names hold no "__", so the first one ends the server's name.
	server, tool, found := strings.Cut(name, "__")
	if !found || Join(server, tool) != name {
		return ref{}, false
	}
	if _, ok := v.g.LiveConfig(server); !ok && !v.g.Disabled(server) {
		return ref{}, false
	}
	return ref{server: server, name: tool}, true // a disabled server's call is refused, saying so
}

// Changed re-reads server from the gateway and updates this view's lists;
// the SDK tells connected clients when a list changed.
func (v *view) Changed(server string) {
	if v.single != "" && server != v.single {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	old := v.byServer[server]
	if old == nil {
		old = &exposed{}
	}
	now := &exposed{}
	v.toolsJSON = nil
	v.syncTools(server, old, now)
	v.syncPrompts(server, old, now)
	v.syncResources(server, old, now)
	v.byServer[server] = now
}

func (v *view) syncTools(server string, old, now *exposed) {
	tools := v.g.Tools(server)
	claims := nameClaims(v, server, tools, func(t gateway.Tool) string { return t.Name })
	for _, name := range old.contested {
		delete(v.contested, name)
	}
	keep := map[string]bool{}
	var docs []search.Doc
	var instructions string
	if v.index != nil {
		instructions = v.g.Instructions(server)
	}
	for _, t := range tools {
		name := v.name(server, t.Name)
		if claims[name] > 1 {
			// An altered name can equal another tool's own: neither gets
			// it, so a new tool never takes over an approved one's name.
			if !slices.Contains(now.contested, name) {
				now.contested = append(now.contested, name)
				if !slices.Contains(old.contested, name) {
					v.log.Warn("two tools of a server have the same aggregated name; neither is listed on /mcp", "server", server, "name", name)
				}
			}
			v.contested[name] = server
			continue
		}
		v.tools[name] = ref{server, t.Name, t.Class}
		now.tools = append(now.tools, name)
		if !t.Visible {
			continue
		}
		if v.index != nil {
			docs = append(docs, searchDoc(server, name, instructions, t.Tool, t.Class))
			continue
		}
		def := *t.Tool
		def.Name = name
		if err := v.show(&def); err != nil {
			v.log.Warn("tool not shown: invalid definition", "server", server, "tool", t.Name, "err", err)
			continue
		}
		keep[name] = true
	}
	for _, name := range old.tools {
		if !slices.Contains(now.tools, name) {
			delete(v.tools, name)
		}
	}
	if v.index != nil {
		v.index.Set(server, docs)
	}
	var drop []string
	for _, name := range old.listed {
		if !keep[name] {
			drop = append(drop, name)
			v.forget("tool:" + name)
		}
	}
	for name := range keep {
		now.listed = append(now.listed, name)
	}
	if len(drop) > 0 {
		v.srv.RemoveTools(drop...)
	}
}

// encodeSchemas replaces t's decoded schemas by their JSON: the SDK encodes
// each listed tool on every tools/list, and encoding a schema's maps (keys
// sorted, at every level) was most of a list's CPU; raw bytes are copied.
// A listed tool's schemas come as JSON already (canon.Raw, see upstream's
// kept), and are kept so; pinned definitions come decoded.
func encodeSchemas(t *mcp.Tool) error {
	for _, s := range []*any{&t.InputSchema, &t.OutputSchema} {
		if _, ok := (*s).(canon.Raw); ok || *s == nil {
			continue
		}
		b, err := json.Marshal(*s)
		if err != nil {
			return err
		}
		*s = json.RawMessage(b)
	}
	return nil
}

// nameClaims counts, per exposed name, the items of server whose upstream name
// maps to it: an altered name can equal another's own.
func nameClaims[T any](v *view, server string, items []T, upstreamName func(T) string) map[string]int {
	n := map[string]int{}
	for _, it := range items {
		n[v.name(server, upstreamName(it))]++
	}
	return n
}

// show lists def, a tool as this view names it, unless it is listed
// already as it is. The view's SDK server holds a stand-in for it (see
// standIn) and the view the definition, which tools/list puts back.
func (v *view) show(def *mcp.Tool) error {
	key := "tool:" + def.Name
	err := inputObject(def.InputSchema)
	if err == nil {
		err = encodeSchemas(def)
	}
	if err != nil {
		v.forget(key)
		return err
	}
	if v.unchanged(key, listedTool{def}) {
		return nil
	}
	if err := addTool(v.srv, v.held(def)); err != nil {
		v.forget(key)
		return err
	}
	v.defs[def.Name] = def
	return nil
}

// held is what the view's SDK server holds for def, listed: def itself
// when an argument binds a header, else a stand-in.
func (v *view) held(def *mcp.Tool) *mcp.Tool {
	if headerBound(v.listed["tool:"+def.Name]) {
		return def
	}
	return &mcp.Tool{Name: def.Name, InputSchema: standIn}
}

// standIn is the input schema a view's SDK server holds for a tool whose
// arguments bind no header. The SDK checks each tool added to a server by
// encoding its schema and decoding it twice, each decode with a fresh 32
// KiB buffer: for 462 tools, 40 ms and 38 MB (BenchmarkShow). Given a
// *jsonschema.Schema, it checks the type from its field; and a schema it
// cannot encode (this one sets both Type and Types) it takes for one
// without annotations. So adding a stand-in costs next to nothing (7 ms
// and 2.7 MB for the 462). It is never sent: withDefinitions puts the
// definition back in every tools/list answer, and one the SDK could not
// encode would fail loudly. What the SDK would check is checked here:
// show checks the type, and a tool whose definition says "x-mcp-header"
// anywhere is held whole, so the SDK checks its annotations, and a call's
// Mcp-Param headers against them. (Listed definitions come as canonical
// JSON from the upstream, or decoded when pinned, so their encoding spells
// every key as it is, without escapes.)
var standIn = &jsonschema.Schema{Type: "object", Types: []string{"object"}}

// inputObject checks that s, a tool's input schema as the upstream listed
// it, has type "object", which the SDK requires.
func inputObject(s any) error {
	var typ any
	switch s := s.(type) {
	case map[string]any:
		typ = s["type"]
	case canon.Raw:
		t, _ := s.Member("type")
		_ = json.Unmarshal(t, &typ)
	case json.RawMessage:
		var m map[string]json.RawMessage // keys as spelled, as the SDK reads them
		if json.Unmarshal(s, &m) == nil {
			_ = json.Unmarshal(m["type"], &typ)
		}
	}
	if typ != "object" {
		return fmt.Errorf(`input schema must have type "object", not %v`, typ)
	}
	return nil
}

// withDefinitions puts back, in a tools/list result of the view's SDK
// server, each tool's definition for its stand-in; one removed meanwhile is
// left out (a list_changed follows), and so is one profile does not allow
// (the search view's own two are the view's, for every caller).
func (v *view) withDefinitions(res *mcp.ListToolsResult, profile *callers.Profile) {
	v.mu.Lock()
	defer v.mu.Unlock()
	tools := res.Tools[:0]
	for _, t := range res.Tools {
		if profile != nil && v.index == nil && !v.allowedLocked(t.Name, profile) {
			continue
		}
		if t.InputSchema == standIn {
			if t = v.defs[t.Name]; t == nil {
				continue
			}
		}
		tools = append(tools, t)
	}
	res.Tools = tools
}

// addTool adds t to srv, turning the SDK's panic over an invalid
// definition into an error.
func addTool(srv *mcp.Server, t *mcp.Tool) error {
	return guard(func() {
		srv.AddTool(t, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, fmt.Errorf("unreachable: tools/call is intercepted") // see intercept
		})
	})
}
