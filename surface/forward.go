package surface

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/gateway"
	"github.com/wardenmcp/warden/metrics"
)

// Prompts, resources and completion: listed per server, forwarded as they are.

func (v *view) syncPrompts(server string, old, now *exposed) {
	prompts := v.g.Prompts(server)
	claims := nameClaims(v, server, prompts, func(p *mcp.Prompt) string { return p.Name })
	keep := map[string]bool{}
	for _, p := range prompts {
		name := v.name(server, p.Name)
		if claims[name] > 1 {
			continue // two prompts would answer to one name: neither does
		}
		def := *p
		def.Name = name
		keep[name] = true
		v.prompts[name] = ref{server: server, name: p.Name}
		now.prompts = append(now.prompts, name)
		if v.unchanged("prompt:"+name, &def) {
			continue
		}
		upstreamName := p.Name
		v.srv.AddPrompt(&def, func(ctx context.Context, r *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			if err := v.permitServer(r.Extra, server); err != nil {
				return nil, err
			}
			params := *r.Params
			params.Name = upstreamName
			params.Meta = hopMeta(params.Meta)
			here, stateless := sessionClient(r.Session)
			return inRounds(ctx, v, here, stateless, "prompt\x00"+name, &params.RequestState, &params.InputResponses,
				func(ctx context.Context, c gateway.Client) (*mcp.GetPromptResult, error) {
					return v.g.GetPrompt(ctx, server, c, &params)
				},
				func(open mcp.InputRequestMap, next string) *mcp.GetPromptResult {
					return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{}, InputRequests: open, RequestState: next}
				})
		})
	}
	if drop := v.dropped("prompt:", old.prompts, keep); len(drop) > 0 {
		for _, name := range drop {
			delete(v.prompts, name)
		}
		v.srv.RemovePrompts(drop...)
	}
}

func (v *view) syncResources(server string, old, now *exposed) {
	read := func(ctx context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		if err := v.permitServer(r.Extra, server); err != nil {
			return nil, err
		}
		params := *r.Params
		params.Meta = hopMeta(params.Meta)
		here, stateless := sessionClient(r.Session)
		return inRounds(ctx, v, here, stateless, "resource\x00"+params.URI, &params.RequestState, &params.InputResponses,
			func(ctx context.Context, c gateway.Client) (*mcp.ReadResourceResult, error) {
				return v.g.ReadResource(ctx, server, c, &params)
			},
			func(open mcp.InputRequestMap, next string) *mcp.ReadResourceResult {
				return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{}, InputRequests: open, RequestState: next}
			})
	}
	keepR, keepT := map[string]bool{}, map[string]bool{}
	for _, r := range v.g.Resources(server) {
		if owner, taken := v.resources[r.URI]; taken && owner != server {
			continue // the first server to offer a URI keeps it
		}
		if !v.unchanged("resource:"+r.URI, r) {
			if err := guard(func() { v.srv.AddResource(r, read) }); err != nil {
				v.log.Warn("resource not shown", "server", server, "uri", r.URI, "err", err)
				v.forget("resource:" + r.URI)
				continue
			}
		}
		keepR[r.URI] = true
		v.resources[r.URI] = server
		now.resources = append(now.resources, r.URI)
	}
	for _, t := range v.g.Templates(server) {
		if owner, taken := v.resources[t.URITemplate]; taken && owner != server {
			continue
		}
		if !v.unchanged("template:"+t.URITemplate, t) {
			if err := guard(func() { v.srv.AddResourceTemplate(t, read) }); err != nil {
				v.log.Warn("resource template not shown", "server", server, "template", t.URITemplate, "err", err)
				v.forget("template:" + t.URITemplate)
				continue
			}
		}
		keepT[t.URITemplate] = true
		v.resources[t.URITemplate] = server
		now.templates = append(now.templates, t.URITemplate)
	}
	if drop := v.dropped("resource:", old.resources, keepR); len(drop) > 0 {
		v.srv.RemoveResources(drop...)
		v.release(server, drop)
	}
	if drop := v.dropped("template:", old.templates, keepT); len(drop) > 0 {
		v.srv.RemoveResourceTemplates(drop...)
		v.release(server, drop)
	}
}

// release gives up server's claim on URIs it no longer offers.
func (v *view) release(server string, uris []string) {
	for _, u := range uris {
		if v.resources[u] == server {
			delete(v.resources, u)
		}
	}
}

// unchanged reports whether def is already listed under key as it is now,
// and records it as listed. Re-adding an unchanged definition would make
// the SDK tell every client that the list changed.
func (v *view) unchanged(key string, def any) bool {
	b, _ := json.Marshal(def)
	if bytes.Equal(v.listed[key], b) {
		return true
	}
	v.listed[key] = b
	return false
}

func (v *view) forget(key string) {
	delete(v.listed, key)
	if name, ok := strings.CutPrefix(key, "tool:"); ok {
		delete(v.defs, name)
	}
}

// dropped returns the names in old that are not kept, forgetting them.
func (v *view) dropped(kind string, old []string, keep map[string]bool) []string {
	var drop []string
	for _, name := range old {
		if !keep[name] {
			drop = append(drop, name)
			v.forget(kind + name)
		}
	}
	return drop
}

// guard turns an SDK panic over a bad upstream definition into an error.
func guard(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	f()
	return nil
}

// owner finds the server behind a completion reference or resource URI.
func (v *view) owner(ref *mcp.CompleteReference) (server string, upstreamRef *mcp.CompleteReference, err error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	switch ref.Type {
	case "ref/prompt":
		if p, ok := v.prompts[ref.Name]; ok {
			r := *ref
			r.Name = p.name
			return p.server, &r, nil
		}
	case "ref/resource":
		if s, ok := v.resources[ref.URI]; ok {
			return s, ref, nil
		}
	}
	return "", nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown completion reference %s %q", ref.Type, ref.Name+ref.URI)}
}

func (v *view) complete(ctx context.Context, r *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	server, upRef, err := v.owner(r.Params.Ref)
	if err == nil {
		err = v.permitServer(r.Extra, server)
	}
	if err != nil {
		return nil, err
	}
	params := *r.Params
	params.Ref = upRef
	params.Meta = hopMeta(params.Meta)
	return v.g.Complete(ctx, server, gateway.SessionClient{ServerSession: r.Session}, &params)
}

func (v *view) resourceOwner(uri string) (string, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if s, ok := v.resources[uri]; ok {
		return s, nil
	}
	if v.single != "" {
		return v.single, nil
	}
	return "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown resource %q", uri)}
}

func (v *view) subscribe(ctx context.Context, r *mcp.SubscribeRequest) error {
	server, err := v.resourceOwner(r.Params.URI)
	if err == nil {
		err = v.permitServer(r.Extra, server)
	}
	if err != nil {
		return err
	}
	return v.g.Subscribe(ctx, server, r.Params.URI, r.Session)
}

func (v *view) unsubscribe(ctx context.Context, r *mcp.UnsubscribeRequest) error {
	server, err := v.resourceOwner(r.Params.URI)
	if err != nil {
		return err
	}
	return v.g.Unsubscribe(ctx, server, r.Params.URI, r.Session)
}

// Log queues an upstream's log message for this view's sessions that asked
// for its level (see live.enqueue).
func (v *view) Log(server string, p *mcp.LoggingMessageParams) {
	if v.single != "" && v.single != server {
		return
	}
	v.sessMu.Lock()
	sessions := make([]*live, 0, len(v.sessions))
	for _, l := range v.sessions {
		sessions = append(sessions, l)
	}
	v.sessMu.Unlock()
	m := v.g.Metrics()
	for _, l := range sessions {
		if l.wants(p.Level) {
			l.enqueue(m, server, p)
		}
	}
}

// ResourceUpdated queues an upstream's update for the sessions subscribed to
// the resource, or drops it (counted) when the queue is full. They
// subscribed through the server that owns its URI here (see subscribe), so
// an update from any other server is not theirs.
func (v *view) ResourceUpdated(server string, p *mcp.ResourceUpdatedNotificationParams) {
	if owner, err := v.resourceOwner(p.URI); err != nil || owner != server {
		return
	}
	m := v.g.Metrics()
	v.updater.Do(func() { go v.sendUpdates(m) })
	select {
	case v.updates <- resourceUpdate{server, p}:
		m.NoticesQueued(1)
	default:
		m.NoticeDropped(server, "slow_client")
	}
}

// sendUpdates sends the queued resource updates until the view is forgotten.
func (v *view) sendUpdates(m *metrics.Metrics) {
	for {
		select {
		case u := <-v.updates:
			m.NoticesQueued(-1)
			_ = v.srv.ResourceUpdated(context.Background(), u.p)
		case <-v.gone:
			m.NoticesQueued(-len(v.updates))
			return
		}
	}
}
