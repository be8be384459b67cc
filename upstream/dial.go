package upstream

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/config"
	"github.com/wardenmcp/warden/protocol"
)

// dialer makes a connection's sessions: the transport of its config, the
// SDK client with Warden's options and handlers, and the revision to ask
// for (the one the upstream spoke last).
type dialer struct {
	name    string
	ctx     context.Context                // the connection's
	cfg     *atomic.Pointer[config.Server] // the connection's
	opts    Options
	log     *slog.Logger
	http    *sessionTransport // nil unless streamable HTTP
	sse     *headerTransport  // nil unless legacy SSE
	notices *noticeGate
	ask     *asker
	changed func() // a list changed upstream
	// started asks a new session for what clients want (see Conn.askFor).
	started func(context.Context, *mcp.ClientSession)

	mu    sync.Mutex
	spoke string // the protocol revision of the last session
}

// connect makes a session, initialized.
func (d *dialer) connect() (*mcp.ClientSession, error) {
	t, stdio, err := d.transport()
	if err != nil {
		return nil, err
	}
	client := mcp.NewClient(clientInfo(d.opts.Version), d.clientOptions())
	client.AddReceivingMiddleware(d.ask.forwardServerRequests)
	addTaskMethods(client)
	client.AddSendingMiddleware(d.ask.roundTrips, holdSchemas, withoutServerInfo)
	ctx, cancel := context.WithTimeout(d.ctx, d.cfg.Load().CallTimeout)
	defer cancel()
	asked := d.protocol()
	cs, err := client.Connect(ctx, t, &mcp.ClientSessionOptions{ProtocolVersion: asked})
	if err != nil && asked == protocol.Newest && answeredOddly(err) {
		// The server answered the discovery, but not as the SDK takes for
		// a "no" (an error page, say): it is asked for a session, as one
		// that says no is. If that fails too, the discovery's error says
		// more.
		if cs2, err2 := client.Connect(ctx, t, &mcp.ClientSessionOptions{ProtocolVersion: sessionProtocol}); err2 == nil {
			cs, err = cs2, nil
		}
	}
	if err != nil {
		err = fmt.Errorf("initialize: %w", err)
		if stdio != nil {
			err = stdio.explain(err)
		}
		return nil, err
	}
	d.mu.Lock()
	d.spoke = cs.InitializeResult().ProtocolVersion
	d.mu.Unlock()
	d.started(ctx, cs)
	return cs, nil
}

// protocol is the revision to ask the upstream for: the one it spoke last
// (to this process, or in a stored session, which is resumed without
// asking), else the newest. A stdio or SSE connection is a session by
// nature: there the newest revision with sessions keeps all the server
// can do (its own requests during a call, log messages, subscriptions),
// which a server of both eras may offer only to session clients.
func (d *dialer) protocol() string {
	if d.cfg.Load().Transport != "http" {
		return sessionProtocol
	}
	d.mu.Lock()
	v := d.spoke
	d.mu.Unlock()
	if v == "" && d.opts.Sessions != nil {
		if rec, ok := d.opts.Sessions.Load(d.name, d.cfg.Load().Fingerprint()); ok {
			v = rec.ProtocolVersion
		}
	}
	if v == "" {
		return protocol.Newest
	}
	return v
}

// answeredOddly reports whether a failed discovery got an answer that is
// not JSON-RPC at all. The SDK says so only in words (a refusal by HTTP
// status, such as a 401, it takes for what it is, and is left to it);
// TestDiscoveryAnsweredOddly notices if they change.
func answeredOddly(err error) bool {
	return strings.Contains(err.Error(), "failed to decode response")
}

// clientInfo is how Warden's client names itself to the upstream.
func clientInfo(version string) *mcp.Implementation {
	return &mcp.Implementation{Name: "warden", Version: version}
}

// stateless reports whether cs speaks a revision without sessions.
func stateless(cs *mcp.ClientSession) bool {
	return cs.InitializeResult().ProtocolVersion >= protocol.StatelessSince
}

// transport is the transport to connect with, and for a stdio server the
// stdio transport inside it (which explains a failed start).
func (d *dialer) transport() (mcp.Transport, *stdioTransport, error) {
	switch d.cfg.Load().Transport {
	case "stdio":
		var stderr io.Writer = io.Discard
		if d.opts.Stderr != nil {
			stderr = d.opts.Stderr(d.name)
		}
		// Stdio writes mark the dispatch boundary here; HTTP requests mark
		// it in their round tripper (wrapping an HTTP connection would hide
		// it from the SDK, which needs to see its own type).
		t := &stdioTransport{cfg: d.cfg.Load(), launcher: d.opts.Launcher, stderr: stderr, graceTime: 2 * time.Second}
		return markingTransport{t, d.notices}, t, nil
	case "http":
		return &mcp.StreamableClientTransport{Endpoint: d.cfg.Load().URL, HTTPClient: &http.Client{Transport: d.http}}, nil, nil
	case "sse":
		t := &mcp.SSEClientTransport{Endpoint: d.cfg.Load().URL, HTTPClient: &http.Client{Transport: d.sse}}
		return longLived{tappingTransport{t}, d.ctx}, nil, nil
	}
	return nil, nil, fmt.Errorf("unknown transport %q", d.cfg.Load().Transport)
}

func (d *dialer) clientOptions() *mcp.ClientOptions {
	return &mcp.ClientOptions{
		Logger:         d.log,
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}, // see roundTrips
		Capabilities: &mcp.ClientCapabilities{
			RootsV2:     &mcp.RootCapabilities{ListChanged: true},
			Sampling:    &mcp.SamplingCapabilities{},
			Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}},
		}, // all a client may be asked: see answersAll
		ToolListChangedHandler:     func(context.Context, *mcp.ToolListChangedRequest) { d.changed() },
		PromptListChangedHandler:   func(context.Context, *mcp.PromptListChangedRequest) { d.changed() },
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { d.changed() },
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			if d.noticeAllowed() {
				d.opts.Peer.ResourceUpdated(d.name, r.Params)
			}
		},
		LoggingMessageHandler: func(ctx context.Context, r *mcp.LoggingMessageRequest) {
			if d.noticeAllowed() {
				d.opts.Peer.Log(ctx, d.name, r.Params)
			}
		},
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			if d.noticeAllowed() {
				d.opts.Peer.Progress(d.name, r.Params)
			}
		},
	}
}

// noticeAllowed passes a notification the SDK handed over through the
// gate, unless the connection's reads did already (stdio).
func (d *dialer) noticeAllowed() bool {
	return d.cfg.Load().Transport == "stdio" || d.notices.allow()
}

// longLived connects with the connection's own context instead of the
// connect timeout's: the legacy SSE transport keeps the context of Connect
// for its event stream, which must outlive the handshake.
type longLived struct {
	mcp.Transport
	ctx context.Context
}

func (t longLived) Connect(context.Context) (mcp.Connection, error) {
	return t.Transport.Connect(t.ctx)
}
