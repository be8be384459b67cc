package config

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

const marker = "S3CRET-MARKER-7f3a"

// TestSecretsNeverShown expands a marker secret everywhere ${env:} is
// allowed and checks it reaches the effective values but never String,
// fmt verbs, DisplayURL or any error message.
func TestSecretsNeverShown(t *testing.T) {
	in := `{"mcpServers": {
	  "remote": {"url": "https://user:${env:TOKEN}@h.test/mcp?key=${env:TOKEN}#${env:TOKEN}",
	             "headers": {"Authorization": "Bearer ${env:TOKEN}"},
	             "oauth": {"clientId": "c", "clientSecret": "${env:TOKEN}", "scopes": ["a", "b"]}},
	  "local": {"command": "srv", "args": ["--token=${env:TOKEN}"], "env": {"T": "${env:TOKEN}"}}
	}}`
	cfg, err := Parse("/x/config.json", []byte(in), env("TOKEN", marker))
	if err != nil {
		t.Fatal(err)
	}
	r, l := cfg.Servers["remote"], cfg.Servers["local"]
	if !strings.Contains(r.URL, marker) || r.Headers["Authorization"] != "Bearer "+marker ||
		l.Args[0] != "--token="+marker || l.Env["T"] != marker ||
		r.OAuth.ClientID != "c" || r.OAuth.ClientSecret != marker || !slices.Equal(r.OAuth.Scopes, []string{"a", "b"}) {
		t.Fatal("not expanded")
	}
	shown := []string{
		r.String(), l.String(), r.DisplayURL(), cfg.String(),
		fmt.Sprintf("%v %+v %#v %s", r, r, r, r),
		fmt.Sprintf("%v %+v %#v %s", l, l, l, l),
		fmt.Sprintf("%v %+v %#v %s", *r, *l, *r, *l),
		fmt.Sprintf("%v %+v", *cfg, *cfg),
		fmt.Sprintf("%v %+v", cfg, cfg),
		fmt.Sprintf("%v %+v %#v %s", r.OAuth, r.OAuth, r.OAuth, r.OAuth),
		fmt.Sprintf("%v %+v %#v %s", *r.OAuth, *r.OAuth, *r.OAuth, *r.OAuth),
	}
	if !slices.Contains(r.Secrets(), marker) {
		t.Error("the client secret is not among Secrets")
	}
	for _, s := range shown {
		if strings.Contains(s, marker) {
			t.Errorf("secret shown: %s", s)
		}
	}
	if got := r.DisplayURL(); got != "https://h.test/mcp" {
		t.Errorf("DisplayURL %q", got)
	}

	// Expanded values that are invalid: the message must not quote them.
	for _, tc := range []struct{ in, val string }{
		{`{"mcpServers": {"r": {"url": "${env:V}"}}}`, "ftp://" + marker},
		{`{"mcpServers": {"r": {"url": "${env:V}"}}}`, "https://" + marker + " x/mcp"},
		{`{"mcpServers": {"r": {"url": "https://${env:V}/mcp"}}}`, "%zz" + marker},
		{`{"mcpServers": {"r": {"url": "https://h/mcp", "headers": {"A": "${env:V}"}}}}`, marker + "\r\nX: y"},
		{`{"mcpServers": {"r": {"command": "c", "env": {"A": "${env:V}"}}}}`, marker + "\x00"},
		{`{"mcpServers": {"r": {"url": "https://h/mcp", "headers": {"A": ${env:V}}}}}`, marker}, // invalid JSON
		{`{"mcpServers": {"r": {"url": "https://h/mcp", "headers": {"A": S3CRET}}}}`, "S3CRET"}, // bare word
		{`{"mcpServers": {"r": {"url": "https://h/mcp", "oauth": {"clientMetadataUrl": "${env:V}"}}}}`, "http://" + marker},
		{`{"mcpServers": {"r": {"url": "https://h/mcp", "oauth": {"clientSecret": "${env:V}"}}}}`, marker},
		{`{"mcpServers": {"r": {"command": "c", "oauth": {"clientId": "${env:V}"}}}}`, marker},
	} {
		_, err := Parse("/x/config.json", []byte(tc.in), env("V", tc.val))
		if err == nil {
			t.Errorf("%s: no error", tc.in)
			continue
		}
		if strings.Contains(err.Error(), marker) || strings.Contains(err.Error(), "S3CRET") {
			t.Errorf("secret in error: %v", err)
		}
	}
}

func TestDisplayURL(t *testing.T) {
	for _, tc := range []struct{ url, want string }{
		{"https://u:p@h.test:8443/a/mcp?k=v#f", "https://h.test:8443/a/mcp"},
		{"https://${env:HOST}/mcp?token=${env:T}", "https://${env:HOST}/mcp"},
		{"http://127.0.0.1:9000/sse", "http://127.0.0.1:9000/sse"},
		{"https://user@h", "https://h"},
	} {
		s := &Server{URL: tc.url}
		if got := s.DisplayURL(); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.url, got, tc.want)
		}
	}
	if (&Server{Command: "x"}).DisplayURL() != "" {
		t.Error("stdio DisplayURL")
	}
}

func clone(s *Server) *Server {
	c := *s
	c.Args = slices.Clone(s.Args)
	c.Env = maps.Clone(s.Env)
	c.Headers = maps.Clone(s.Headers)
	c.Tools = maps.Clone(s.Tools)
	return &c
}

func TestEqual(t *testing.T) {
	in := `{"mcpServers": {"s": {"command": "c", "args": ["a"], "env": {"E": "1"}, "cwd": "/w",
		"tools": {"t": {"class": "read"}}}}}`
	cfg, err := Parse("f", []byte(in), env())
	if err != nil {
		t.Fatal(err)
	}
	base := cfg.Servers["s"]
	again, _ := Parse("f", []byte(in), env())
	if !base.Equal(again.Servers["s"]) || !base.Equal(clone(base)) {
		t.Fatal("same config not Equal")
	}
	changes := map[string][]func(*Server){
		"Name":    {func(s *Server) { s.Name = "o" }},
		"Command": {func(s *Server) { s.Command = "d" }},
		"Args":    {func(s *Server) { s.Args[0] = "b" }, func(s *Server) { s.Args = append(s.Args, "b") }, func(s *Server) { s.Args = nil }},
		"Env":     {func(s *Server) { s.Env["E"] = "2" }, func(s *Server) { s.Env["F"] = "1" }},
		"EnvFile": {func(s *Server) { s.EnvFile = "/w/.env" }},
		"Cwd":     {func(s *Server) { s.Cwd = "/v" }},
		"URL":     {func(s *Server) { s.URL = "https://h/mcp" }},
		"Headers": {func(s *Server) { s.Headers = map[string]string{"A": "b"} }},
		"OAuth": {func(s *Server) { s.OAuth = &OAuth{} }, func(s *Server) { s.OAuth = &OAuth{ClientID: "c"} },
			func(s *Server) { s.OAuth = &OAuth{Scopes: []string{"x"}} }},
		"Transport":          {func(s *Server) { s.Transport = TransportHTTP }},
		"Trusted":            {func(s *Server) { s.Trusted = true }},
		"Disabled":           {func(s *Server) { s.Disabled = true }},
		"ConfirmDestructive": {func(s *Server) { s.ConfirmDestructive = true }},
		"CallTimeout":        {func(s *Server) { s.CallTimeout = time.Second }},
		"InheritEnv":         {func(s *Server) { s.InheritEnv = []string{"A"} }},
		"InheritAllEnv":      {func(s *Server) { s.InheritAllEnv = true }},
		"OnDemand":           {func(s *Server) { s.OnDemand = true }},
		"IdleTimeout":        {func(s *Server) { s.IdleTimeout = time.Second }},
		"Sandbox": {func(s *Server) { s.Sandbox.NoNetwork = true }, func(s *Server) { s.Sandbox.Paths = true },
			func(s *Server) { s.Sandbox.Read = []string{"/d"} }, func(s *Server) { s.Sandbox.Write = []string{"/d"} },
			func(s *Server) { s.Sandbox.Image = "i" }, func(s *Server) { s.Sandbox.Engine = "podman" }},
		"Tools": {func(s *Server) { s.Tools["t"] = ToolOverride{Class: ClassWrite} },
			func(s *Server) { s.Tools["t"] = ToolOverride{Class: ClassRead, Hidden: true} },
			func(s *Server) { s.Tools["u"] = ToolOverride{} }},
		"Tasks":      {func(s *Server) { s.Tasks.All = true }, func(s *Server) { s.Tasks.Names = []string{"t"} }},
		"Guardrails": {func(s *Server) { s.Guardrails.AllowSecrets = true }},
	}
	typ := reflect.TypeFor[Server]()
	for i := range typ.NumField() {
		if f := typ.Field(i); f.IsExported() && changes[f.Name] == nil {
			t.Errorf("no Equal case for field %s", f.Name)
		}
	}
	for field, fns := range changes {
		for i, fn := range fns {
			c := clone(base)
			fn(c)
			if base.Equal(c) || c.Equal(base) {
				t.Errorf("%s change %d not detected", field, i)
			}
		}
	}
	// An env value behind ${env:} changing is a change.
	a, _ := Parse("f", []byte(`{"mcpServers": {"s": {"url": "https://h/mcp", "headers": {"A": "${env:T}"}}}}`), env("T", "1"))
	b, _ := Parse("f", []byte(`{"mcpServers": {"s": {"url": "https://h/mcp", "headers": {"A": "${env:T}"}}}}`), env("T", "2"))
	if a.Servers["s"].Equal(b.Servers["s"]) {
		t.Error("expanded header change not detected")
	}
	if !a.Servers["s"].SameConnection(a.Servers["s"]) || a.Servers["s"].SameConnection(b.Servers["s"]) {
		t.Error("SameConnection")
	}
	// nil and empty are the same; nil servers.
	x, y := &Server{Name: "n"}, &Server{Name: "n", Args: []string{}, Env: map[string]string{}}
	if !x.Equal(y) || x.Equal(nil) || !(*Server)(nil).Equal(nil) {
		t.Error("nil handling")
	}
}

func TestFingerprint(t *testing.T) {
	fp := func(server string, kv ...string) string {
		t.Helper()
		cfg, err := Parse("f", []byte(`{"mcpServers": {"s": `+server+`}}`), env(kv...))
		if err != nil {
			t.Fatal(err)
		}
		return cfg.Servers["s"].Fingerprint()
	}
	base := fp(`{"url": "https://h/mcp"}`)
	sum := sha256.Sum256([]byte("warden-upstream\x00http\x00https://h/mcp"))
	if base != hex.EncodeToString(sum[:8]) {
		t.Errorf("fingerprint formula changed: %s", base)
	}
	same := []string{
		fp(`{"url": "https://h/mcp", "headers": {"Authorization": "Bearer x"}}`),
		fp(`{"url": "https://h/mcp", "headers": {"Authorization": "Bearer y"}, "trusted": true}`),
		fp(`{"url": "https://h/mcp", "transport": "http"}`),
	}
	for i, s := range same {
		if s != base {
			t.Errorf("same %d: fingerprint changed", i)
		}
	}
	if fp(`{"url": "https://h/mcp2"}`) == base || fp(`{"url": "https://h/mcp", "transport": "sse"}`) == base {
		t.Error("URL or transport change not in fingerprint")
	}
	// Unexpanded: the URL as written, so a changed variable keeps the key.
	if fp(`{"url": "https://${env:H}/mcp"}`, "H", "a") != fp(`{"url": "https://${env:H}/mcp"}`, "H", "b") {
		t.Error("fingerprint depends on expansion")
	}
}

func TestLoadErrorUnwraps(t *testing.T) {
	_, err := Load(t.TempDir())
	var e *Error
	if !errors.As(err, &e) || errors.Unwrap(err) == nil {
		t.Fatalf("%v", err)
	}
}
