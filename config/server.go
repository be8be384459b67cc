package config

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
)

// Equal reports whether s and o have the same effective config (expanded
// values, inferred transport, defaults applied). Hot reload leaves a server
// alone when its old and new configs are Equal. Nil and empty maps and
// lists are the same.
func (s *Server) Equal(o *Server) bool {
	if s == nil || o == nil {
		return s == o
	}
	return s.Name == o.Name && s.SameConnection(o) &&
		s.Trusted == o.Trusted && s.Disabled == o.Disabled &&
		s.ConfirmDestructive == o.ConfirmDestructive &&
		s.CallTimeout == o.CallTimeout && maps.Equal(s.Tools, o.Tools) && s.Tasks.Equal(o.Tasks) &&
		s.Guardrails == o.Guardrails
}

// SameConnection reports whether s and o connect to the upstream the same
// way (command, args, env, envFile, cwd, inheritEnv, sandbox, start,
// idleTimeout, url, headers, oauth, transport). When only policy fields differ (trusted, tools, timeouts...)
// a reload can apply them without restarting the upstream.
func (s *Server) SameConnection(o *Server) bool {
	if s == nil || o == nil {
		return s == o
	}
	return s.Transport == o.Transport && s.Command == o.Command &&
		slices.Equal(s.Args, o.Args) && maps.Equal(s.Env, o.Env) && s.EnvFile == o.EnvFile && s.Cwd == o.Cwd &&
		slices.Equal(s.InheritEnv, o.InheritEnv) && s.InheritAllEnv == o.InheritAllEnv && s.Sandbox.Equal(o.Sandbox) &&
		s.OnDemand == o.OnDemand && s.IdleTimeout == o.IdleTimeout &&
		s.URL == o.URL && maps.Equal(s.Headers, o.Headers) && s.OAuth.Equal(o.OAuth)
}

// Fingerprint is a stable short hash (16 hex digits) of the transport and
// the URL as written in the file, before ${env:} expansion. Persisted
// upstream sessions are keyed by it, so a session is not resumed against a
// different endpoint. It never covers headers, so rotating a token keeps the
// session. Formula: first 8 bytes of SHA-256("warden-upstream\x00" +
// transport + "\x00" + url), hex.
func (s *Server) Fingerprint() string {
	h := sha256.Sum256([]byte("warden-upstream\x00" + s.Transport + "\x00" + s.writtenURL()))
	return hex.EncodeToString(h[:8])
}

// DisplayURL is the URL safe to show a person: as written before ${env:}
// expansion, with any userinfo, query and fragment removed. "" for a stdio
// server.
func (s *Server) DisplayURL() string {
	scheme, authority, path := splitURL(s.writtenURL())
	if i := strings.LastIndexByte(authority, '@'); i >= 0 {
		authority = authority[i+1:]
	}
	return scheme + authority + path
}

// Secrets are the values in s that must never be shown, for masking them
// in text that may quote them (an upstream's error, say), longest first:
// every ${env:} expansion and the URL's password from 4 characters on, and
// the URL's query, header and env values and a header's last word (the
// token of "Bearer TOKEN") from 8 on (shorter ones would mask innocent
// words).
func (s *Server) Secrets() []string {
	var out []string
	add := func(v string, min int) {
		if len(v) >= min {
			out = append(out, v)
		}
	}
	for _, v := range s.expanded {
		add(v, 4)
	}
	if u, err := url.Parse(s.URL); err == nil {
		if p, ok := u.User.Password(); ok {
			add(p, 4)
		}
		add(u.RawQuery, 8)
	}
	for _, v := range s.Headers {
		if f := strings.Fields(v); len(f) > 1 {
			add(f[len(f)-1], 8)
		}
		add(v, 8)
	}
	for _, v := range s.Env {
		add(v, 8)
	}
	if s.OAuth != nil {
		add(s.OAuth.ClientSecret, 4)
	}
	// Longest first, so that a secret holding another is masked whole.
	slices.SortFunc(out, func(a, b string) int { return cmp.Or(len(b)-len(a), strings.Compare(a, b)) })
	return slices.Compact(out)
}

// String names the server and its endpoint without secrets: the command but
// not its args or env, the DisplayURL but not headers. It has a value
// receiver so that printing a Server value is as safe as printing a pointer.
func (s Server) String() string {
	if s.Transport == TransportStdio || (s.Transport == "" && s.Command != "") {
		return fmt.Sprintf("%s (stdio: %s, %d args)", s.Name, s.Command, len(s.Args))
	}
	return fmt.Sprintf("%s (%s: %s)", s.Name, s.Transport, s.DisplayURL())
}

// GoString keeps %#v from printing secrets.
func (s Server) GoString() string { return "config.Server{" + s.String() + "}" }

func (s *Server) writtenURL() string {
	if s.parsed {
		return s.rawURL
	}
	return s.URL
}

// written returns the fields as they should be written back to a file:
// with ${env:} references unexpanded for a Server that came from Parse.
func (s *Server) written() (url string, args []string, env, headers map[string]string) {
	if s.parsed {
		return s.rawURL, s.rawArgs, s.rawEnv, s.rawHeaders
	}
	return s.URL, s.Args, s.Env, s.Headers
}

// writtenOAuth is OAuth as written: see written.
func (s *Server) writtenOAuth() *OAuth {
	if s.parsed {
		return s.rawOAuth
	}
	return s.OAuth
}

// splitURL cuts a URL by hand into "scheme://", authority and path, dropping
// query and fragment. It works on text that url.Parse rejects, such as
// unexpanded ${env:} references.
func splitURL(raw string) (scheme, authority, path string) {
	if i := strings.IndexAny(raw, "?#"); i >= 0 {
		raw = raw[:i]
	}
	if i := strings.Index(raw, "://"); i >= 0 {
		scheme, raw = raw[:i+3], raw[i+3:]
		authority, path = raw, ""
		if j := strings.IndexByte(raw, '/'); j >= 0 {
			authority, path = raw[:j], raw[j:]
		}
		return scheme, authority, path
	}
	return "", "", raw
}
