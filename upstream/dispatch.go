package upstream

import (
	"errors"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Answered reports whether err is the upstream's own answer (a JSON-RPC error
// response), as opposed to a transport failure or a cancellation: an answered
// call has a known outcome. A refusal for want of a login is Warden's own.
func Answered(err error) bool {
	return Answer(err) != nil
}

// Answer is the upstream's own JSON-RPC error in err, nil if err is not the
// upstream's answer. Calling a 2026-07-28 upstream, the SDK's client wraps
// failures of its own in a JSON-RPC error too, "rejected by transport" (-32005): a
// request that did not reach the server, or whose answer never came, a
// refusal for want of a login; that one is not an answer, though an answer
// it wraps (a non-2xx response's JSON-RPC body) is.
func Answer(err error) *jsonrpc.Error {
	if errors.Is(err, ErrAuthRequired) {
		return nil
	}
	var found *jsonrpc.Error
	walk(err, func(e error) bool {
		je, ok := e.(*jsonrpc.Error)
		if ok && !(je.Code == rejectedByTransport.Code && je.Message == rejectedByTransport.Message) {
			found = je
			return false
		}
		return true
	})
	return found
}

// rejectedByTransport is the SDK client's own error for a request its
// transport failed.
var rejectedByTransport = jsonrpc.Error{Code: -32005, Message: "rejected by transport"}

// walk visits err's tree depth first, as errors.As does, while visit
// returns true.
func walk(err error, visit func(error) bool) bool {
	if err == nil {
		return true
	}
	if !visit(err) {
		return false
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return walk(u.Unwrap(), visit)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if !walk(e, visit) {
				return false
			}
		}
	}
	return true
}

// ErrUnavailable is returned when the server is not connected.
var ErrUnavailable = errors.New("upstream unavailable")
