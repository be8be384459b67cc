package surface

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Prompts, resources and completion: listed per server, forwarded as they are.

func (v *view) syncPrompts(server string, old, now *exposed) {
	v.srv.RemovePrompts(old.prompts...)
	for _, name := range old.prompts {
		delete(v.prompts, name)
	}
	for _, p := range v.g.Prompts(server) {
		name := v.name(server, p.Name)
		def := *p
		def.Name = name
		upstreamName := p.Name
		v.srv.AddPrompt(&def, func(ctx context.Context, r *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			params := *r.Params
			params.Name = upstreamName
			var res *mcp.GetPromptResult
			err := v.g.Do(ctx, server, func(ctx context.Context, cs *mcp.ClientSession) (err error) {
				res, err = cs.GetPrompt(ctx, &params)
				return err
			})
			return res, err
		})
		v.prompts[name] = ref{server, p.Name}
		now.prompts = append(now.prompts, name)
	}
}

func (v *view) syncResources(server string, old, now *exposed) {
	v.srv.RemoveResources(old.resources...)
	v.srv.RemoveResourceTemplates(old.templates...)
	for _, u := range append(old.resources, old.templates...) {
		if v.resources[u] == server {
			delete(v.resources, u)
		}
	}
	read := func(ctx context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		var res *mcp.ReadResourceResult
		err := v.g.Do(ctx, server, func(ctx context.Context, cs *mcp.ClientSession) (err error) {
			res, err = cs.ReadResource(ctx, r.Params)
			return err
		})
		return res, err
	}
	for _, r := range v.g.Resources(server) {
		if owner, taken := v.resources[r.URI]; taken && owner != server {
			continue // the first server to offer a URI keeps it
		}
		if err := guard(func() { v.srv.AddResource(r, read) }); err != nil {
			v.log.Warn("resource not shown", "server", server, "uri", r.URI, "err", err)
			continue
		}
		v.resources[r.URI] = server
		now.resources = append(now.resources, r.URI)
	}
	for _, t := range v.g.Templates(server) {
		if owner, taken := v.resources[t.URITemplate]; taken && owner != server {
			continue
		}
		if err := guard(func() { v.srv.AddResourceTemplate(t, read) }); err != nil {
			v.log.Warn("resource template not shown", "server", server, "template", t.URITemplate, "err", err)
			continue
		}
		v.resources[t.URITemplate] = server
		now.templates = append(now.templates, t.URITemplate)
	}
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
	if err != nil {
		return nil, err
	}
	params := *r.Params
	params.Ref = upRef
	var res *mcp.CompleteResult
	err = v.g.Do(ctx, server, func(ctx context.Context, cs *mcp.ClientSession) (err error) {
		res, err = cs.Complete(ctx, &params)
		return err
	})
	return res, err
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
	if err != nil {
		return err
	}
	return v.g.Do(ctx, server, func(ctx context.Context, cs *mcp.ClientSession) error {
		return cs.Subscribe(ctx, r.Params)
	})
}

func (v *view) unsubscribe(ctx context.Context, r *mcp.UnsubscribeRequest) error {
	server, err := v.resourceOwner(r.Params.URI)
	if err != nil {
		return err
	}
	return v.g.Do(ctx, server, func(ctx context.Context, cs *mcp.ClientSession) error {
		return cs.Unsubscribe(ctx, r.Params)
	})
}

// Log sends an upstream's log message to this view's sessions; the SDK drops
// it for sessions that asked for a higher level or none.
func (v *view) Log(server string, p *mcp.LoggingMessageParams) {
	if v.single != "" && v.single != server {
		return
	}
	for ss := range v.srv.Sessions() {
		_ = ss.Log(context.Background(), p)
	}
}

// ResourceUpdated passes an upstream's update to subscribed sessions.
func (v *view) ResourceUpdated(server string, p *mcp.ResourceUpdatedNotificationParams) {
	if v.single != "" && v.single != server {
		return
	}
	_ = v.srv.ResourceUpdated(context.Background(), p)
}
