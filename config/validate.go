package config

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/tailscale/hujson"
)

var (
	transports = []string{TransportStdio, TransportHTTP, TransportSSE}
	classes    = []string{ClassRead, ClassWrite, ClassDestructive}
)

// ValidName reports whether name can name a server: letters, digits, "_"
// and "-", without "__" (Warden joins server and tool names with "__").
func ValidName(name string) bool {
	p, _ := nameProblem(name)
	return p == ""
}

func nameProblem(name string) (problem, fix string) {
	switch {
	case name == "":
		return "server name is empty", "name it with letters, digits, \"_\" and \"-\""
	case !bareKey.MatchString(name):
		return strconv.Quote(name) + " is not a valid server name", "use only letters, digits, \"_\" and \"-\""
	case strings.Contains(name, "__"):
		return strconv.Quote(name) + ` contains "__", which Warden uses to join server and tool names`,
			`use a single "_" or "-" instead`
	case strings.HasSuffix(name, "_"):
		// "a_" + "__" + "x" would read as server "a", tool "_x".
		return strconv.Quote(name) + ` ends in "_", which would run into the "__" Warden joins server and tool names with`,
			`drop the trailing "_" or end the name with a letter or digit`
	}
	return "", ""
}

// CheckListen checks a host:port listen address given on a command line
// (serve --listen). Port 0 is allowed there: the daemon takes a free port
// and the CLI finds the daemon on its state dir's socket, and asks it. A
// config's listen needs a fixed port: it is where MCP clients are pointed,
// and the OAuth redirect URI registered with authorization servers.
func CheckListen(addr string) error {
	if p := listenProblem(addr, 0); p != "" {
		return fmt.Errorf("%s; write host:port such as \"127.0.0.1:7373\"", p)
	}
	return nil
}

// listenProblem checks a host:port listen address whose port is from
// minPort to 65535.
func listenProblem(addr string, minPort int) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return strconv.Quote(addr) + " is not a host:port address"
	}
	if n, err := strconv.Atoi(port); err != nil || n < minPort || n > 65535 {
		return fmt.Sprintf("%q does not have a port from %d to 65535", addr, minPort)
	}
	if strings.ContainsAny(host, " /") {
		return strconv.Quote(addr) + " does not have a valid host"
	}
	return ""
}

func envKeyProblem(k string) (problem, fix string) {
	if k == "" || strings.ContainsAny(k, "=\x00") {
		return "is not a valid environment variable name", `use a name without "=", such as "API_KEY"`
	}
	return "", ""
}

func envValueProblem(v string) string {
	if strings.Contains(v, "\x00") {
		return "the value contains a NUL byte"
	}
	return ""
}

func headerKeyProblem(k string) (problem, fix string) {
	if k == "" {
		return "header name is empty", `write a header name such as "Authorization"`
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return "is not a valid HTTP header name", `use letters, digits and "-", such as "Authorization"`
		}
	}
	return "", ""
}

func headerValueProblem(v string) string {
	if strings.ContainsAny(v, "\r\n\x00") {
		return "the value contains a line break or NUL byte"
	}
	return ""
}

// checkServer checks the rules that involve several fields of one server,
// and infers Transport. Problems about the URL never quote it: after
// expansion it may hold a secret.
func (d *decoder) checkServer(s *Server, v *hujson.Value, at map[string]*hujson.Value, path string, urlUnresolved bool) error {
	hasCmd, hasURL := at["command"] != nil, at["url"] != nil
	field := func(f string) string { return join(path, f) }
	switch {
	case hasCmd && hasURL:
		return d.errAt(v, path, `has both "command" and "url"`,
			`keep "command" for a stdio server or "url" for an HTTP one`)
	case !hasCmd && !hasURL:
		return d.errAt(v, path, `has neither "command" nor "url"`,
			`add "command" for a stdio server or "url" for an HTTP one`)
	case s.Transport == TransportStdio && hasURL:
		return d.errAt(at["url"], field("url"), `"url" is for HTTP servers but transport is "stdio"`,
			`remove "transport" or replace "url" with "command"`)
	case (s.Transport == TransportHTTP || s.Transport == TransportSSE) && hasCmd:
		return d.errAt(at["command"], field("command"), `"command" is for stdio servers but transport is `+strconv.Quote(s.Transport),
			`remove "transport" or replace "command" with "url"`)
	}
	if hasCmd {
		s.Transport = TransportStdio
		if len(s.Headers) > 0 {
			return d.errAt(at["headers"], field("headers"), "headers are only for HTTP servers", `remove "headers" or use "env"`)
		}
		if s.OAuth != nil {
			return d.errAt(at["oauth"], field("oauth"), `"oauth" is only for HTTP servers`, `remove "oauth"`)
		}
		return nil
	}
	for _, f := range []string{"args", "env", "envFile", "cwd", "inheritEnv", "sandbox", "start", "idleTimeout"} {
		if x := at[f]; x != nil && !emptyComposite(x) {
			return d.errAt(x, field(f), strconv.Quote(f)+" is only for stdio servers, and this one has a url",
				`remove "`+f+`"; pass settings to an HTTP server in the url or "headers"`)
		}
	}
	if !urlUnresolved {
		if p := urlProblem(s.URL); p != "" {
			fix := `write an absolute http:// or https:// URL such as "https://example.test/mcp"`
			if s.URL != s.rawURL {
				p += " after ${env:} expansion"
			}
			return d.errAt(at["url"], field("url"), p, fix)
		}
	}
	if s.Transport == "" {
		s.Transport = inferTransport(s.URL)
	}
	return nil
}

// emptyComposite reports whether v is "" , [] or {}.
func emptyComposite(v *hujson.Value) bool {
	switch x := v.Value.(type) {
	case *hujson.Object:
		return len(x.Members) == 0
	case *hujson.Array:
		return len(x.Elements) == 0
	case hujson.Literal:
		return x.Kind() == '"' && x.String() == ""
	}
	return false
}

// urlProblem checks an upstream URL without ever quoting it.
func urlProblem(raw string) string {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return "is not a valid URL"
	case u.Scheme != "http" && u.Scheme != "https":
		return "is not an http:// or https:// URL"
	case u.Host == "" || u.Hostname() == "":
		return "has no host"
	}
	return ""
}

// inferTransport picks the transport of a server given by URL: legacy SSE
// when the path ends in /sse, streamable HTTP otherwise. raw may still hold
// ${env:} references (editing), so it is cut by hand rather than parsed.
func inferTransport(raw string) string {
	_, _, path := splitURL(raw)
	if strings.HasSuffix(strings.TrimRight(path, "/"), "/sse") {
		return TransportSSE
	}
	return TransportHTTP
}
