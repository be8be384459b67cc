// Package config loads, validates, diffs, edits and watches Warden's config
// file: JSON with comments and trailing commas (JSONC) whose "mcpServers" map
// has the shape other MCP hosts use.
//
// Parse is strict: an unknown field, a wrong type or a bad value is an *Error
// naming the file, the field and the fix, because a typo silently ignored in a
// security gateway is a policy silently not applied. ${env:NAME} references
// in args, env, url, headers, oauth, store and storeKey are expanded at parse time, as are
// the variables of a stdio server's envFile; these values are treated as
// secrets and never appear in errors, String() or DisplayURL. The path
// variables other hosts document (${workspaceFolder}, ${userHome}, ...)
// expand there too and in command, cwd and envFile. Files written for other
// MCP hosts load as they are: fields those hosts keep for themselves are
// ignored with a note, while a field no host uses is an error.
package config

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Defaults applied when the file leaves a field out.
const (
	DefaultListen             = "127.0.0.1:7373"
	DefaultCallTimeout        = 60 * time.Second
	DefaultIdleTimeout        = 10 * time.Minute
	DefaultActivityMaxEntries = 10000
	DefaultActivityMaxAge     = 7 * 24 * time.Hour
	// DefaultToolSearchBudget is the tokens of tool definitions past which
	// "toolSearch": "auto" shows the search view.
	DefaultToolSearchBudget = 10000
)

// Transports a server can use.
const (
	TransportStdio = "stdio"
	TransportHTTP  = "http" // streamable HTTP
	TransportSSE   = "sse"  // legacy HTTP+SSE
)

// Start modes of a stdio server.
const (
	StartAlways   = "always"
	StartOnDemand = "onDemand"
)

// Tool search modes.
const (
	ToolSearchOff  = "off"
	ToolSearchOn   = "on"
	ToolSearchAuto = "auto"
)

// How search_tools orders what it found (toolSearch's "rerank").
const (
	RerankNone     = "none"     // as the index ranked it
	RerankSampling = "sampling" // as the calling client's model orders it, when it offers one
)

// Write classes a tool override can set.
const (
	ClassRead        = "read"
	ClassWrite       = "write"
	ClassDestructive = "destructive"
)

// Config is a parsed, validated config file with defaults applied.
type Config struct {
	Path     string // file it was read from ("" when none)
	Listen   string // host:port of the one listener; default 127.0.0.1:7373
	StateDir string // optional; "~/" and paths relative to the config file's directory are resolved
	// Store is the shared store's postgres:// URL (${env:} expanded); empty
	// is the embedded store in the state dir. StoreKey seals the secrets
	// kept in it; every instance sharing the store is given the same.
	Store    string
	StoreKey string
	Activity Activity // activity log retention
	Tasks    Tasks    // how long finished tasks stay, how many run at once
	// ToolSearch is which tools /mcp lists: every tool ("off"), the search
	// view ("on"), or the search view once the visible tools' definitions
	// cost more than ToolSearchBudget tokens ("auto").
	ToolSearch       string
	ToolSearchBudget int
	// ToolSearchRerank is how search_tools orders its candidates:
	// RerankNone, or RerankSampling (toolSearch's "rerank").
	ToolSearchRerank string
	Servers          map[string]*Server // "mcpServers", keyed by name; never nil

	// PublicURL is how clients reach Warden ("publicURL", no trailing
	// "/"), for the absolute URLs Warden gives out; "" when not set.
	PublicURL string

	// Known callers (callers.go). With Auth set, every MCP request needs an
	// identity provider's access token for Warden or a client's token.
	Auth *Auth
	// With Clients set, every MCP request needs
	// a client's bearer token, and a caller sees and calls only what its
	// profile allows; nil, as before, anyone who reaches the port.
	Clients  map[string]Client  // "clients", keyed by name
	Profiles map[string]Profile // "profiles", keyed by name
	Access   []Access           // "access", in file order
	// Operators give people of Auth's identity provider roles on /v1 and
	// /ui/; nil: only the local operator decides.
	Operators []Operator

	// Missing is true when Load found no file at Path. The config is then
	// the empty default one, which is valid: Warden starts with no servers.
	// A caller reloading on change may prefer to keep its running config
	// when a file it had read goes missing (editors briefly remove files).
	Missing bool
	// Empty is true when the file holds nothing but white space: the
	// default config too. An editor saving over the file truncates it
	// first, so a reloading caller may see it empty for a moment.
	Empty bool
	// Sum is the SHA-256 of the file's bytes as read (Load, Parse), so a
	// caller can tell whether a second read saw the same file.
	Sum [sha256.Size]byte

	// Broken holds, by name, the server entries that cannot be loaded
	// (LoadAll and ParseAll only; Load and Parse fail instead): the rest
	// of the file loads without them.
	Broken map[string]*Error
	// Notes name the fields of other MCP hosts that were ignored.
	Notes []string
}

// Activity bounds the activity log: entries beyond MaxEntries or older
// than MaxAge are dropped.
type Activity struct {
	MaxEntries int           // default 10000
	MaxAge     time.Duration // default 7 days
}

// Tasks bounds the tasks Warden runs (the tasks extension): a finished
// task's result stays Retention, then is removed; at most MaxPerServer
// tasks run at once for one server and MaxPerCaller for one caller. Zero
// values take the defaults (package tasks: 1 hour, 32 and 16).
type Tasks struct {
	Retention                  time.Duration
	MaxPerServer, MaxPerCaller int
}

// Server is one upstream MCP server from "mcpServers".
//
// The exported fields hold effective values: ${env:NAME} references are
// expanded and Transport is inferred, so a caller can connect with them
// directly. Treat Args, Env, URL and Headers as secrets: log DisplayURL or
// String, never these fields.
type Server struct {
	Name string // map key

	// stdio
	Command string
	Args    []string
	Env     map[string]string // with the variables of EnvFile that "env" does not set
	Cwd     string
	// EnvFile ("envFile") is a file of NAME=VALUE lines whose variables
	// the server gets too; absolute once parsed.
	EnvFile string
	// envFileOpened is where EnvFile was read from, links resolved ("" if
	// that could not be told): see RefuseCrossWrites.
	envFileOpened string
	// A stdio server gets a minimal environment (package sandbox), plus
	// these names from Warden's, or all of Warden's with InheritAllEnv.
	InheritEnv    []string
	InheritAllEnv bool
	Sandbox       Sandbox
	// OnDemand ("start": "onDemand"): the server runs only while called,
	// stopping after IdleTimeout without a call.
	OnDemand    bool
	IdleTimeout time.Duration

	// HTTP (streamable or SSE)
	URL     string
	Headers map[string]string
	OAuth   *OAuth // nil: discovered and registered dynamically when the server asks

	Transport          string // TransportStdio, TransportHTTP or TransportSSE
	Trusted            bool   // first complete inventory becomes the approved baseline
	Disabled           bool   // configured but not started
	ConfirmDestructive bool   // ask the human through elicitation before each destructive call
	CallTimeout        time.Duration
	Tools              map[string]ToolOverride // keyed by upstream tool name
	Tasks              TaskTools               // the tools run as tasks whatever their definitions say
	Guardrails         Guardrails              // what the guardrails let through to the server

	// As written in the file, with ${env:} references unexpanded (the path
	// variables are expanded: see expansion). Set by Parse only; for a
	// Server built in code the exported fields are what was written.
	parsed     bool
	rawURL     string
	rawArgs    []string
	rawEnv     map[string]string
	rawHeaders map[string]string
	rawOAuth   *OAuth
	expanded   []string // values of its ${env:} references and its envFile: secrets
}

// TaskTools is a server's "tasks": the tools that run as tasks (the tasks
// extension) for clients that ask for them, beside those whose definitions
// declare task support: all of them ("all"), or those named.
type TaskTools struct {
	All   bool
	Names []string
}

// Has reports whether tool is among them.
func (t TaskTools) Has(tool string) bool { return t.All || slices.Contains(t.Names, tool) }

// Equal reports whether t and o name the same tools.
func (t TaskTools) Equal(o TaskTools) bool { return t.All == o.All && slices.Equal(t.Names, o.Names) }

// Guardrails is a server's "guardrails": {"secrets": "block" | "allow"}.
// By default a call whose arguments carry a credential is refused
// (ARGUMENTS_BLOCKED); AllowSecrets sends it, for a server meant to take
// them (a secrets manager, a login tool).
type Guardrails struct {
	AllowSecrets bool // "secrets": "allow"
}

// Secrets values.
const (
	SecretsBlock = "block"
	SecretsAllow = "allow"
)

// Sandbox is a stdio server's "sandbox": confinement beyond the default.
type Sandbox struct {
	NoNetwork bool     // "network": false
	Paths     bool     // "paths" given: files only under Read, Write and the system dirs
	Read      []string // "paths.read", resolved like stateDir
	Write     []string // "paths.write"
	Image     string   // "container.image": run the command in this image
	Engine    string   // "container.engine": "docker", "podman" or "" (whichever is installed)
}

// Equal reports whether s and o confine the same way.
func (s Sandbox) Equal(o Sandbox) bool {
	return s.NoNetwork == o.NoNetwork && s.Paths == o.Paths && slices.Equal(s.Read, o.Read) && slices.Equal(s.Write, o.Write) &&
		s.Image == o.Image && s.Engine == o.Engine
}

// OAuth is an HTTP server's "oauth": how Warden identifies itself to the
// server's authorization server. Each field is optional; without a client
// Warden registers itself dynamically.
type OAuth struct {
	ClientID          string   // pre-registered client ("clientId")
	ClientSecret      string   // its secret, if confidential ("clientSecret"); a secret
	ClientMetadataURL string   // a client ID metadata document ("clientMetadataUrl"), an https URL
	Scopes            []string // asked for instead of the discovered ones ("scopes")
}

// String shows the client but never its secret; GoString keeps %#v from
// printing it too.
func (o OAuth) String() string {
	return fmt.Sprintf("oauth{clientId: %q, clientMetadataUrl: %q, scopes: %q, secret set: %t}", o.ClientID, o.ClientMetadataURL, o.Scopes, o.ClientSecret != "")
}

func (o OAuth) GoString() string { return "config." + o.String() }

// Equal reports whether o and p say the same.
func (o *OAuth) Equal(p *OAuth) bool {
	if o == nil || p == nil {
		return o == p
	}
	return o.ClientID == p.ClientID && o.ClientSecret == p.ClientSecret &&
		o.ClientMetadataURL == p.ClientMetadataURL && slices.Equal(o.Scopes, p.Scopes)
}

// ToolOverride is the config's say over one upstream tool.
type ToolOverride struct {
	Class  string // "" (from annotations), ClassRead, ClassWrite or ClassDestructive
	Hidden bool   // left out of tools/list and refused
	// RecordArgs keeps the arguments' values (each cut short) in the record
	// of a call whose outcome is unknown, for the person who checks it
	// upstream. Off by default: values can be secrets.
	RecordArgs bool
}

// DefaultPath is where the config lives when --config is not given:
// $WARDEN_CONFIG, else $XDG_CONFIG_HOME/warden/config.json, else
// ~/.config/warden/config.json.
func DefaultPath() string {
	if p := os.Getenv("WARDEN_CONFIG"); p != "" {
		return p
	}
	if x := os.Getenv("XDG_CONFIG_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "warden", "config.json")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".config", "warden", "config.json")
}

// defaults returns the config of an empty file.
func defaults(path string) *Config {
	return &Config{
		Path:       path,
		Listen:     DefaultListen,
		Activity:   Activity{MaxEntries: DefaultActivityMaxEntries, MaxAge: DefaultActivityMaxAge},
		ToolSearch: ToolSearchOff, ToolSearchBudget: DefaultToolSearchBudget, ToolSearchRerank: RerankNone,
		Servers: map[string]*Server{},
	}
}

// Load reads and parses the file at path ("" means DefaultPath), expanding
// ${env:NAME} from the process environment. Path is made absolute.
//
// A missing file is not an error: Load returns the default config with
// Missing set, so a first run works without a file. Any other problem is an
// *Error.
func Load(path string) (*Config, error) {
	return load(path, false)
}

// LoadAll is Load, except that a server entry that cannot be loaded leaves
// out only that server, with its problem in Broken. A problem with the
// file as a whole (its syntax, a top-level field) is still an error.
func LoadAll(path string) (*Config, error) {
	return load(path, true)
}

func load(path string, all bool) (*Config, error) {
	if path == "" {
		path = DefaultPath()
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	data, err := ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		cfg := defaults(path)
		cfg.Missing = true
		return cfg, nil
	}
	var ce *Error
	if errors.As(err, &ce) {
		return nil, err
	}
	if err != nil {
		return nil, &Error{File: path, Problem: "cannot read the file: " + pathErr(err),
			Fix: "check that it is a readable file", err: err}
	}
	return parse(path, data, os.LookupEnv, false, all)
}

// Parse parses and validates config file contents. path is only used in
// messages and to resolve a relative stateDir. lookupEnv resolves
// ${env:NAME}; nil means os.LookupEnv. An empty (or whitespace-only) file is
// the default config. The first problem found, in file order, is returned as
// an *Error.
func Parse(path string, data []byte, lookupEnv func(string) (string, bool)) (*Config, error) {
	if lookupEnv == nil {
		lookupEnv = os.LookupEnv
	}
	return parse(path, data, lookupEnv, false, false)
}

// ParseAll is Parse in the way of LoadAll.
func ParseAll(path string, data []byte, lookupEnv func(string) (string, bool)) (*Config, error) {
	if lookupEnv == nil {
		lookupEnv = os.LookupEnv
	}
	return parse(path, data, lookupEnv, false, true)
}

// parse is Parse with a lenient mode for editing: an unset variable is then
// left unexpanded instead of being an error, because the daemon that will
// read the file may have an environment the editing CLI lacks. With all, a
// server entry that cannot be loaded goes to Broken.
func parse(path string, data []byte, lookupEnv func(string) (string, bool), lenient, all bool) (*Config, error) {
	cfg := defaults(path)
	cfg.Sum = sha256.Sum256(data)
	data = bytes.TrimPrefix(data, utf8BOM)
	if len(bytes.TrimSpace(data)) == 0 {
		cfg.Empty = true
		return cfg, nil
	}
	if err := CheckBounds(path, data); err != nil {
		return nil, err
	}
	d := newDecoder(path, data, lookupEnv, lenient)
	if all {
		d.broken = map[string]*Error{}
	}
	if err := d.decode(cfg); err != nil {
		return nil, err
	}
	cfg.Notes = d.notes
	if len(d.broken) > 0 {
		cfg.Broken = d.broken
	}
	return cfg, nil
}

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// String describes the config without secrets.
func (c *Config) String() string {
	if c == nil {
		return "config <nil>"
	}
	names := make([]string, 0, len(c.Servers))
	for n := range c.Servers {
		names = append(names, n)
	}
	slices.Sort(names)
	return fmt.Sprintf("config %s: listen %s, %d servers [%s]", c.Path, c.Listen, len(names), strings.Join(names, " "))
}
