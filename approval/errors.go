package approval

import (
	"errors"
	"fmt"
	"strings"
)

var (
	// ErrHashMismatch: a definition differs from the reviewed one. Callers
	// answer 409. The typed error is *HashMismatchError.
	ErrHashMismatch = errors.New("tool definitions changed since the review")
	// ErrUnknownServer: no such server in the registry. Callers answer 404.
	ErrUnknownServer = errors.New("unknown server")
	// ErrUnknownTool: a named tool has no record. Callers answer 404.
	ErrUnknownTool = errors.New("unknown tool")
	// ErrInvalidRequest: the request itself is malformed. Callers answer 400.
	ErrInvalidRequest = errors.New("invalid request")
	// ErrInvalidInventory: an inventory that cannot be applied (duplicate or
	// empty names); the previous state stays.
	ErrInvalidInventory = errors.New("invalid tool inventory")
)

// Mismatch is one reviewed tool whose definition is not the reviewed one.
// Current is "" when the tool has no record; Expected is "" when the tool was
// not part of the review.
type Mismatch struct {
	Tool     string `json:"tool"`
	Expected string `json:"expected"`
	Current  string `json:"current"`
}

// HashMismatchError lists every mismatch; nothing was written.
type HashMismatchError struct {
	Server     string
	Mismatches []Mismatch
}

func (e *HashMismatchError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "server %q: %d tool(s) differ from the review, nothing was approved:", e.Server, len(e.Mismatches))
	for _, m := range e.Mismatches {
		switch {
		case m.Current == "":
			fmt.Fprintf(&b, " %q (no such tool now)", m.Tool)
		case m.Expected == "":
			fmt.Fprintf(&b, " %q (not in the review; current %s)", m.Tool, m.Current)
		default:
			fmt.Fprintf(&b, " %q (reviewed %s, current %s)", m.Tool, m.Expected, m.Current)
		}
		b.WriteByte(';')
	}
	fmt.Fprintf(&b, " review again with \"warden review %s\" and approve what it shows", e.Server)
	return b.String()
}

func (e *HashMismatchError) Unwrap() error { return ErrHashMismatch }

// UnknownServerError names a server the registry has no record of.
type UnknownServerError struct{ Server string }

func (e *UnknownServerError) Error() string {
	return fmt.Sprintf("server %q is not known: check the name with \"warden servers\"; a server must be in the config and loaded", e.Server)
}

func (e *UnknownServerError) Unwrap() error { return ErrUnknownServer }

// UnknownToolError names requested tools the server has no record of.
type UnknownToolError struct {
	Server string
	Tools  []string
}

func (e *UnknownToolError) Error() string {
	q := make([]string, len(e.Tools))
	for i, t := range e.Tools {
		q[i] = fmt.Sprintf("%q", t)
	}
	return fmt.Sprintf("server %q has no tool %s; nothing was changed; list its tools with \"warden tools %s\"", e.Server, strings.Join(q, ", "), e.Server)
}

func (e *UnknownToolError) Unwrap() error { return ErrUnknownTool }

func invalid(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidRequest, fmt.Sprintf(format, a...))
}
