package upstream

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/protocol"
)

// Server-to-client requests, in both eras. A 2025 upstream sends sampling,
// elicitation and roots requests on its session; a 2026-07-28 one answers
// a call "input required" with the same questions, and is called again
// with the answers. Either way the question goes to the downstream client
// of the call (the Peer finds it), as it is: that client is the one that
// answers, and the SDK client's own checks or roots list are not.

// asker puts one upstream's questions to the clients of its calls, through
// the Peer: what its 2025 session asks (forwardServerRequests) and the
// rounds of an input-required result (roundTrips, answerRound).
type asker struct {
	name  string
	peer  Peer
	level func() mcp.LoggingLevel // what a stateless server is asked for (see askable)
}

// maxRounds bounds the rounds of one call with a stateless-era upstream.
const maxRounds = 10

// forwardServerRequests hands a 2025 upstream's requests to answer,
// instead of the SDK client's handlers.
func (a *asker) forwardServerRequests(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		var q mcp.InputRequest
		switch r := req.(type) {
		case *mcp.CreateMessageWithToolsRequest:
			q = r.Params
		case *mcp.ElicitRequest:
			q = r.Params
		case *mcp.ListRootsRequest:
			q = r.Params
		default:
			return next(ctx, method, req)
		}
		a, err := a.peer.Ask(ctx, a.name, "", q)
		if err != nil {
			return nil, replyError(err)
		}
		return a.(mcp.Result), nil
	}
}

// replyError is the error an upstream's request is answered with when
// answering it failed, on both paths: the client's own JSON-RPC error as it
// came (code, message, data), anything else an internal error (the SDK
// alone would send a Go error with code 0, and a wrapped JSON-RPC error
// with the wrapper's message).
func replyError(err error) *jsonrpc.Error {
	var werr *jsonrpc.Error
	if errors.As(err, &werr) {
		return werr
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
}

// roundTrips runs a call's rounds: while its result asks for input, the
// questions are answered (together) and the call sent again with the
// answers and the upstream's request state. Stateless-era upstreams answer
// so; a 2025 one may too (the Go SDK's, whose handlers return questions,
// puts a first round's to the client itself but passes on a second's).
func (a *asker) roundTrips(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		req = a.forCaller(ctx, req)
		for round := 1; ; round++ {
			res, err := next(ctx, method, req)
			if err != nil {
				return res, err
			}
			asks, state, ok := inputRequired(res)
			if !ok {
				return res, nil
			}
			answers, err := a.answerRound(ctx, method, round, asks)
			if err != nil {
				return nil, err
			}
			if req, err = again(req, answers, state); err != nil {
				return nil, err
			}
		}
	}
}

// answerRound answers the questions of a call's round-th result.
func (a *asker) answerRound(ctx context.Context, method string, round int, asks mcp.InputRequestMap) (mcp.InputResponseMap, error) {
	// Answered, the server's call ends here (nothing is in doubt).
	if len(asks) == 0 {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
			Message: fmt.Sprintf("%s: server %q is busy (it asked for no input and said to call again); retry later", method, a.name)}
	}
	if round == maxRounds {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
			Message: fmt.Sprintf("%s: server %q still asked for input after %d rounds; Warden stopped there", method, a.name, maxRounds)}
	}
	answers, err := a.answerAll(ctx, asks)
	if err != nil {
		if a := Answer(err); a != nil {
			return nil, a // the client's refusal, such as a capability it lacks
		}
		// The server answered every request it was sent, and is not sent
		// another: nothing is in doubt, unlike a 2025 server left waiting
		// on its own question.
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
			Message: fmt.Sprintf("%s: server %q asked for input that did not come (%v), so Warden did not call it again", method, a.name, err)}
	}
	return answers, nil
}

// answerAll answers a round's questions at once.
func (a *asker) answerAll(ctx context.Context, asks mcp.InputRequestMap) (mcp.InputResponseMap, error) {
	var (
		mu      sync.Mutex
		wg      sync.WaitGroup
		errs    []error
		answers = make(mcp.InputResponseMap, len(asks))
	)
	for id, q := range asks {
		wg.Go(func() {
			a, err := a.peer.Ask(ctx, a.name, id, q)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("input %q: %w", id, err))
				return
			}
			answers[id] = a
		})
	}
	wg.Wait()
	return answers, errors.Join(errs...)
}

// inputRequired reads an input-required result: one that says so, or one
// with questions that says nothing (a 2025 result has no resultType).
func inputRequired(res mcp.Result) (asks mcp.InputRequestMap, state string, ok bool) {
	switch r := res.(type) {
	case *mcp.CallToolResult:
		asks, state, ok = r.InputRequests, r.RequestState, r.NeedsInput()
	case *mcp.GetPromptResult:
		asks, state, ok = r.InputRequests, r.RequestState, r.NeedsInput()
	case *mcp.ReadResourceResult:
		asks, state, ok = r.InputRequests, r.RequestState, r.NeedsInput()
	}
	return asks, state, ok || len(asks) > 0
}

// again is req to send once more, with the answers and the request state.
func again(req mcp.Request, answers mcp.InputResponseMap, state string) (mcp.Request, error) {
	cs, _ := req.GetSession().(*mcp.ClientSession)
	switch p := req.GetParams().(type) {
	case *mcp.CallToolParams:
		q := *p
		q.InputResponses, q.RequestState = answers, state
		return &mcp.ClientRequest[*mcp.CallToolParams]{Session: cs, Params: &q}, nil
	case *mcp.GetPromptParams:
		q := *p
		q.InputResponses, q.RequestState = answers, state
		return &mcp.ClientRequest[*mcp.GetPromptParams]{Session: cs, Params: &q}, nil
	case *mcp.ReadResourceParams:
		q := *p
		q.InputResponses, q.RequestState = answers, state
		return &mcp.ClientRequest[*mcp.ReadResourceParams]{Session: cs, Params: &q}, nil
	}
	return nil, fmt.Errorf("cannot call %T again with input", req.GetParams())
}

// askable is a call's params saying, as the client's capabilities, which
// questions the upstream may put to it: those the calling client can answer
// (caller; nil for an operator call, which can answer none). Without them
// the upstream would go by the SDK client's own, which stand for Warden's
// client, not the caller, and could not refuse with
// MissingRequiredClientCapability as the protocol wants. A call that names
// no log level asks for level, the one 2025 clients set for the server's
// session (see SetLogLevel): a stateless server has no session to set it
// on ("" for a 2025 server, which has).
//
// With tasks (a task call passed through: see passesTask) the upstream is
// also told the client speaks the tasks extension, so that it may answer
// a task handle.
func askable(params *mcp.CallToolParams, caller *mcp.ClientCapabilities, level mcp.LoggingLevel, tasks bool) *mcp.CallToolParams {
	p := *params
	p.Meta = askableMeta(params.Meta, caller, level, tasks)
	return &p
}

// askableMeta is meta with what askable adds.
func askableMeta(meta mcp.Meta, caller *mcp.ClientCapabilities, level mcp.LoggingLevel, tasks bool) mcp.Meta {
	var caps struct {
		Sampling    *mcp.SamplingCapabilities    `json:"sampling,omitempty"`
		Elicitation *mcp.ElicitationCapabilities `json:"elicitation,omitempty"`
		Roots       *mcp.RootCapabilities        `json:"roots,omitempty"`
		Extensions  map[string]any               `json:"extensions,omitempty"`
	}
	if caller != nil {
		caps.Sampling, caps.Elicitation, caps.Roots = caller.Sampling, caller.Elicitation, caller.RootsV2
	}
	if tasks {
		caps.Extensions = map[string]any{protocol.TasksExtension: map[string]any{}}
	}
	meta = maps.Clone(meta)
	if meta == nil {
		meta = mcp.Meta{}
	}
	meta[mcp.MetaKeyClientCapabilities] = caps
	if _, named := meta[mcp.MetaKeyLogLevel]; !named && level != "" {
		meta[mcp.MetaKeyLogLevel] = level
	}
	return meta
}

// forCaller is req, a prompt or resource request, as sent for the client
// of the call ctx carries, if any: a stateless-era upstream is told with it
// what that client can answer, as with a tool call (see askable), not what
// Warden's own client could.
func (a *asker) forCaller(ctx context.Context, req mcp.Request) mcp.Request {
	call, ok := CallFrom(ctx)
	cs, _ := req.GetSession().(*mcp.ClientSession)
	if !ok || cs == nil || !stateless(cs) {
		return req
	}
	caps, _ := call.caller()
	switch p := req.GetParams().(type) {
	case *mcp.GetPromptParams:
		q := *p
		q.Meta = askableMeta(p.Meta, caps, a.level(), false)
		return &mcp.ClientRequest[*mcp.GetPromptParams]{Session: cs, Params: &q}
	case *mcp.ReadResourceParams:
		q := *p
		q.Meta = askableMeta(p.Meta, caps, a.level(), false)
		return &mcp.ClientRequest[*mcp.ReadResourceParams]{Session: cs, Params: &q}
	}
	return req
}

// answersAll reports whether caller can answer whatever Warden's session
// with a 2025 upstream declared it could (see clientOptions).
func answersAll(caller *mcp.ClientCapabilities) bool {
	return caller != nil && caller.Sampling != nil && caller.RootsV2 != nil && caller.Elicitation != nil &&
		caller.Elicitation.Form != nil && caller.Elicitation.URL != nil
}
