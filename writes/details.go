package writes

import (
	"encoding/json"
	"slices"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/guardrails"
)

// What a latch keeps of a call, beyond its hash, so that the person who
// checks upstream whether it happened can find it there: which client made
// it, and the shape of its arguments. Everything here came from a client
// (untrusted) and is bounded, so that no call can make its record large.

// Record bounds.
const (
	MaxArgs     = 32   // arguments listed; the others are only counted (Latch.ArgsOmitted)
	MaxName     = 128  // bytes kept of an argument's name and of a client's name or version
	MaxArgValue = 1024 // bytes kept of a recorded value
)

// Caller is the client that made a call, as it named itself (its
// clientInfo, from initialize or, in the 2026-07-28 revision, the
// request's _meta), and the MCP session it made it on (none in that
// revision). Empty for an operator's call (warden call).
type Caller struct {
	Name    string `json:"name,omitempty"`
	Version string `json:"version,omitempty"`
	Session string `json:"session,omitempty"`
	// User is who the request's token named (package callers: a user, else
	// a client of the config's "clients"); empty without known callers.
	User string `json:"user,omitempty"`
}

// ClientOf is the Caller for a client that named itself info (nil when it
// did not) on session ("" for none).
func ClientOf(info *mcp.Implementation, session string) Caller {
	c := Caller{Session: session}
	if info != nil {
		c.Name, _ = cut(info.Name, MaxName)
		c.Version, _ = cut(info.Version, MaxName)
	}
	return c
}

// Arg is one top-level argument of a call: its name and the size of its
// JSON, and its value (that JSON, cut to MaxArgValue bytes) only when the
// tool's config says recordArgs: values can be secrets, and credentials in
// known formats are masked even then.
type Arg struct {
	Name     string `json:"name"`
	Bytes    int    `json:"bytes"`
	Value    string `json:"value,omitempty"`
	ValueCut bool   `json:"value_cut,omitempty"` // Value is the value's start only
}

// DescribeArgs lists the arguments of raw (a call's arguments: a JSON
// object; any other value has none) by name, at most MaxArgs of them, and
// says how many more there were; with values, each one's JSON too.
func DescribeArgs(raw json.RawMessage, values bool) (args []Arg, omitted int) {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil, 0
	}
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	slices.Sort(names)
	if len(names) > MaxArgs {
		names, omitted = names[:MaxArgs], len(names)-MaxArgs
	}
	for _, name := range names {
		a := Arg{Bytes: len(m[name])}
		a.Name, _ = cut(name, MaxName)
		if values {
			a.Value, a.ValueCut = recorded(m[name])
		}
		args = append(args, a)
	}
	return args, omitted
}

// maskWindow is how much of a value is searched for credentials before it
// is cut to MaxArgValue: enough for a credential that starts within what is
// kept to be found whole (a private key's PEM block is a few KiB).
const maskWindow = 8 << 10

// recorded is a value as a latch keeps it: each credential in a known format
// masked (recordArgs keeps what finds a write upstream, not a token), then
// cut to MaxArgValue bytes; and whether it was cut.
func recorded(v json.RawMessage) (string, bool) {
	s, cutShort := cut(guardrails.MaskSecrets(string(v[:min(len(v), maskWindow)])), MaxArgValue)
	return s, cutShort || len(v) > maskWindow
}

// cut is s in at most n bytes, whole characters only, and whether it was
// cut.
func cut(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n], true
}
