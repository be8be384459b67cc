package config

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const serverKnown = "known fields are command, args, env, cwd, url, headers, transport, type, trusted, disabled, callTimeout, confirmDestructive, tools, inheritEnv, sandbox, start, idleTimeout, oauth, envFile, tasks, guardrails"

// TestErrors checks that each bad input gives the promised message: file,
// field path, problem and fix.
func TestErrors(t *testing.T) {
	const pre = "config /x/config.json: "
	servers := func(s string) string { return `{"mcpServers": {` + s + `}}` }
	for _, tc := range []struct {
		name, in string
		want     string // the whole Error(), or a prefix of it when ending in "…"
		field    string
	}{
		{"unknown server field", servers(`"fs": {"comand": "x"}`),
			pre + `mcpServers.fs.comand: unknown field; ` + serverKnown + ` (did you mean "command"?)`, "mcpServers.fs.comand"},
		{"unknown field, alias", servers(`"fs": {"url": "https://h/mcp", "endpoint": "x"}`),
			pre + `mcpServers.fs.endpoint: unknown field; ` + serverKnown + ` (did you mean "url"?)`, "mcpServers.fs.endpoint"},
		{"type and transport disagree", servers(`"fs": {"url": "https://h/mcp", "transport": "http", "type": "sse"}`),
			pre + `mcpServers.fs.type: says "sse" but "transport"/"type" also says "http"; keep one of "transport" and "type"`, "mcpServers.fs.type"},
		{"bad type", servers(`"fs": {"url": "https://h/mcp", "type": "websocket"}`),
			pre + `mcpServers.fs.type: "websocket" is not a transport; write "stdio", "http" or "sse"`, "mcpServers.fs.type"},
		{"unknown top field", `{"listn": "x"}`,
			pre + `listn: unknown field; known fields are listen, stateDir, store, storeKey, activity, tasks, toolSearch, toolSearchBudget, mcpServers, publicURL, auth, clients, profiles, access, operators (did you mean "listen"?)`, "listn"},
		{"unknown field, no suggestion", `{"zzzzzzzz": 1}`,
			pre + `zzzzzzzz: unknown field; known fields are listen, stateDir, store, storeKey, activity, tasks, toolSearch, toolSearchBudget, mcpServers, publicURL, auth, clients, profiles, access, operators`, "zzzzzzzz"},
		{"unknown tool field", servers(`"fs": {"command": "x", "tools": {"rm": {"klass": "read"}}}`),
			pre + `mcpServers.fs.tools.rm.klass: unknown field; known fields are class, hidden, recordArgs (did you mean "class"?)`, "mcpServers.fs.tools.rm.klass"},
		{"unknown activity field", `{"activity": {"maxAge": "1h", "max": 3}}`,
			pre + `activity.max: unknown field; known fields are maxEntries, maxAge…`, "activity.max"},
		{"neither command nor url", servers(`"x": {"trusted": true}`),
			pre + `mcpServers.x: has neither "command" nor "url"; add "command" for a stdio server or "url" for an HTTP one`, "mcpServers.x"},
		{"both command and url", servers(`"x": {"command": "a", "url": "https://h/mcp"}`),
			pre + `mcpServers.x: has both "command" and "url"; keep "command" for a stdio server or "url" for an HTTP one`, "mcpServers.x"},
		{"bad duration", servers(`"remote": {"url": "https://h/mcp", "callTimeout": "5 sec"}`),
			pre + `mcpServers.remote.callTimeout: "5 sec" is not a duration; write a Go duration such as "30s" or "2m"`, "mcpServers.remote.callTimeout"},
		{"zero duration", servers(`"remote": {"url": "https://h/mcp", "callTimeout": "0s"}`),
			pre + `mcpServers.remote.callTimeout: "0s" is not more than zero; write a Go duration such as "30s" or "2m"`, "mcpServers.remote.callTimeout"},
		{"number duration", servers(`"remote": {"url": "https://h/mcp", "callTimeout": 30}`),
			pre + `mcpServers.remote.callTimeout: is a number, not a duration string; write a Go duration such as "30s" or "2m"`, "mcpServers.remote.callTimeout"},
		{"bad activity duration", `{"activity": {"maxAge": "7 days"}}`,
			pre + `activity.maxAge: "7 days" is not a duration; write a Go duration such as "30s" or "2m"`, "activity.maxAge"},
		{"bad start", `{"mcpServers": {"fs": {"command": "x", "start": "lazy"}}}`,
			pre + `mcpServers.fs.start: "lazy" is not a start mode; write "always" or "onDemand"`, "mcpServers.fs.start"},
		{"bad toolSearch", `{"toolSearch": "yes"}`,
			pre + `toolSearch: is not a tool search mode; write "off", "on" or "auto"`, "toolSearch"},
		{"bad toolSearch type", `{"toolSearch": true}`,
			pre + `toolSearch: is a boolean, not an object; write "off", "on" or "auto", or an object such as {"mode": "on", "rerank": "sampling"}`, "toolSearch"},
		{"bad toolSearch mode", `{"toolSearch": {"mode": "yes"}}`,
			pre + `toolSearch.mode: is not a tool search mode; write "off", "on" or "auto"`, "toolSearch.mode"},
		{"bad toolSearch rerank", `{"toolSearch": {"rerank": "llm"}}`,
			pre + `toolSearch.rerank: is not a way to rerank; write "none" (the index's order, the default) or "sampling" (the calling client's model orders the best candidates, when the client offers sampling)`, "toolSearch.rerank"},
		{"unknown toolSearch field", `{"toolSearch": {"rerankk": "sampling"}}`,
			pre + `toolSearch.rerankk: unknown field; known fields are mode, rerank (did you mean "rerank"?)`, "toolSearch.rerankk"},
		{"bad toolSearchBudget", `{"toolSearchBudget": 0}`,
			pre + `toolSearchBudget: is not a whole number of tokens above zero; write a number such as 10000`, "toolSearchBudget"},
		{"bad maxEntries", `{"activity": {"maxEntries": 1.5}}`,
			pre + `activity.maxEntries: is not a whole number of entries above zero; write a number such as 10000`, "activity.maxEntries"},
		{"bad transport", servers(`"x": {"url": "https://h/mcp", "transport": "streamable"}`),
			pre + `mcpServers.x.transport: "streamable" is not a transport; write "stdio", "http" or "sse"`, "mcpServers.x.transport"},
		{"bad task retention", `{"tasks": {"retention": "an hour"}}`,
			pre + `tasks.retention: "an hour" is not a duration; write a Go duration such as "30s" or "2m"`, "tasks.retention"},
		{"bad task limit", `{"tasks": {"maxPerCaller": 0}}`,
			pre + `tasks.maxPerCaller: is not a whole number of tasks above zero; write a number such as 16`, "tasks.maxPerCaller"},
		{"bad tasks", servers(`"x": {"command": "a", "tasks": "some"}`),
			pre + `mcpServers.x.tasks: "some" is not a choice of tasks; write "all", or a list of the upstream's tool names such as ["build", "deploy"]`, "mcpServers.x.tasks"},
		{"bad secrets", servers(`"x": {"command": "a", "guardrails": {"secrets": "warn"}}`),
			pre + `mcpServers.x.guardrails.secrets: "warn" is not a choice of secrets; write "block" (the default: a call carrying a credential is refused) or "allow"`, "mcpServers.x.guardrails.secrets"},
		{"unknown guardrail", servers(`"x": {"command": "a", "guardrails": {"tokens": "allow"}}`),
			pre + `mcpServers.x.guardrails.tokens: unknown field; known fields are secrets`, "mcpServers.x.guardrails.tokens"},
		{"guardrails not an object", servers(`"x": {"command": "a", "guardrails": "allow"}`),
			pre + `mcpServers.x.guardrails: is a string, not an object; write an object such as {"secrets": "allow"}`, "mcpServers.x.guardrails"},
		{"empty task name", servers(`"x": {"command": "a", "tasks": ["build", ""]}`),
			pre + `mcpServers.x.tasks[1]: tool name is empty; write the upstream tool's name`, "mcpServers.x.tasks[1]"},
		{"bad class", servers(`"x": {"command": "a", "tools": {"rm": {"class": "dangerous"}}}`),
			pre + `mcpServers.x.tools.rm.class: "dangerous" is not a class; write "read", "write" or "destructive"`, "mcpServers.x.tools.rm.class"},
		{"stdio with url", servers(`"x": {"url": "https://h/mcp", "transport": "stdio"}`),
			pre + `mcpServers.x.url: "url" is for HTTP servers but transport is "stdio"; remove "transport" or replace "url" with "command"`, "mcpServers.x.url"},
		{"http with command", servers(`"x": {"command": "a", "transport": "http"}`),
			pre + `mcpServers.x.command: "command" is for stdio servers but transport is "http"; remove "transport" or replace "command" with "url"`, "mcpServers.x.command"},
		{"sse with command", servers(`"x": {"command": "a", "transport": "sse"}`),
			pre + `mcpServers.x.command: "command" is for stdio servers but transport is "sse"…`, "mcpServers.x.command"},
		{"args on http server", servers(`"x": {"url": "https://h/mcp", "args": ["-v"]}`),
			pre + `mcpServers.x.args: "args" is only for stdio servers, and this one has a url…`, "mcpServers.x.args"},
		{"headers on stdio server", servers(`"x": {"command": "a", "headers": {"A": "b"}}`),
			pre + `mcpServers.x.headers: headers are only for HTTP servers…`, "mcpServers.x.headers"},
		{"invalid JSON", "{\n  \"listen\": \"127.0.0.1:1\"\n  \"mcpServers\": {}\n}",
			pre + `line 3, column 3: invalid JSON: invalid character '"' after object value (expecting ',' or '}'); fix the JSON syntax there (comments and trailing commas are allowed)`, ""},
		{"truncated JSON", "{\n  \"mcpServers\": {\n",
			pre + `line 3, column 1: invalid JSON: the file ends before the JSON does (an unclosed {, [ or string?)…`, ""},
		{"not an object", `["a"]`,
			pre + `line 1, column 1: the file holds a list, not an object; write an object such as {"mcpServers": {}}`, ""},
		{"name with space", servers(`"my server": {"command": "a"}`),
			pre + `mcpServers["my server"]: "my server" is not a valid server name; use only letters, digits, "_" and "-"`, `mcpServers["my server"]`},
		{"name with dot", servers(`"a.b": {"command": "a"}`),
			pre + `mcpServers["a.b"]: "a.b" is not a valid server name…`, `mcpServers["a.b"]`},
		{"name with __", servers(`"a__b": {"command": "a"}`),
			pre + `mcpServers.a__b: "a__b" contains "__", which Warden uses to join server and tool names; use a single "_" or "-" instead`, "mcpServers.a__b"},
		{"name ending in _", servers(`"a_": {"command": "a"}`),
			pre + `mcpServers.a_: "a_" ends in "_", which would run into the "__" Warden joins server and tool names with; drop the trailing "_" or end the name with a letter or digit`, "mcpServers.a_"},
		{"empty name", servers(`"": {"command": "a"}`),
			pre + `mcpServers[""]: server name is empty…`, `mcpServers[""]`},
		{"listen without port", `{"listen": "localhost"}`,
			pre + `listen: "localhost" is not a host:port address; write host:port such as "127.0.0.1:7373"`, "listen"},
		{"listen bad port", `{"listen": "127.0.0.1:99999"}`,
			pre + `listen: "127.0.0.1:99999" does not have a port from 1 to 65535; write host:port such as "127.0.0.1:7373"`, "listen"},
		{"listen any port", `{"listen": "127.0.0.1:0"}`,
			pre + `listen: "127.0.0.1:0" does not have a port from 1 to 65535; write host:port such as "127.0.0.1:7373"`, "listen"},
		{"unset env", servers(`"remote": {"url": "https://h/mcp", "headers": {"Authorization": "Bearer ${env:REMOTE_TOKEN}"}}`),
			pre + `mcpServers.remote.headers.Authorization: ${env:REMOTE_TOKEN} refers to REMOTE_TOKEN, which is not set; set REMOTE_TOKEN in the environment Warden runs in, or remove the reference`, "mcpServers.remote.headers.Authorization"},
		{"unset env in args", servers(`"x": {"command": "a", "args": ["--k", "${env:K}"]}`),
			pre + `mcpServers.x.args[1]: ${env:K} refers to K, which is not set…`, "mcpServers.x.args[1]"},
		{"shell-style reference", servers(`"x": {"command": "a", "env": {"T": "${TOKEN}"}}`),
			pre + `mcpServers.x.env.T: ${TOKEN...} is not expanded by Warden; write ${env:TOKEN} to use the environment variable TOKEN; Warden expands ${env:NAME}, ${workspaceFolder}, ${workspaceFolderBasename}, ${userHome} and ${pathSeparator}`, "mcpServers.x.env.T"},
		{"bad env reference", servers(`"x": {"command": "a", "env": {"T": "${env:A B}"}}`),
			pre + `mcpServers.x.env.T: ${env:A B} does not name a variable…`, "mcpServers.x.env.T"},
		{"duplicate key", servers(`"x": {"command": "a"}, "x": {"command": "b"}`),
			pre + `mcpServers.x: appears twice in the same object; keep one`, "mcpServers.x"},
		{"args not a list", servers(`"x": {"command": "a", "args": "-v"}`),
			pre + `mcpServers.x.args: is a string, not a list of strings; write a list such as ["-y", "some-package"]`, "mcpServers.x.args"},
		{"arg not a string", servers(`"x": {"command": "a", "args": ["--port", 80]}`),
			pre + `mcpServers.x.args[1]: is a number, not a string; write a string in double quotes`, "mcpServers.x.args[1]"},
		{"bool as string", servers(`"x": {"command": "a", "trusted": "yes"}`),
			pre + `mcpServers.x.trusted: is a string, not true or false; write true or false without quotes`, "mcpServers.x.trusted"},
		{"empty command", servers(`"x": {"command": " "}`),
			pre + `mcpServers.x.command: is empty…`, "mcpServers.x.command"},
		{"ftp url", servers(`"x": {"url": "ftp://h/mcp"}`),
			pre + `mcpServers.x.url: is not an http:// or https:// URL; write an absolute http:// or https:// URL such as "https://example.test/mcp"`, "mcpServers.x.url"},
		{"url without host", servers(`"x": {"url": "https:///mcp"}`),
			pre + `mcpServers.x.url: has no host…`, "mcpServers.x.url"},
		{"bad header name", servers(`"x": {"url": "https://h/mcp", "headers": {"Bad Header": "v"}}`),
			pre + `mcpServers.x.headers["Bad Header"]: is not a valid HTTP header name…`, `mcpServers.x.headers["Bad Header"]`},
		{"server not an object", servers(`"x": "npx"`),
			pre + `mcpServers.x: is a string, not an object…`, "mcpServers.x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse("/x/config.json", []byte(tc.in), env())
			if err == nil {
				t.Fatalf("no error; got %v", cfg)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error is %T, not *Error: %v", err, err)
			}
			got := err.Error()
			if want, ok := strings.CutSuffix(tc.want, "…"); ok {
				if !strings.HasPrefix(got, want) {
					t.Errorf("got  %s\nwant %s…", got, want)
				}
			} else if got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
			if e.Field != tc.field || e.File != "/x/config.json" || e.Line == 0 {
				t.Errorf("field %q file %q line %d", e.Field, e.File, e.Line)
			}
		})
	}
}

// serve --listen may take any free port (the CLI finds the daemon on its
// state dir's socket); a config's listen may not.
func TestCheckListen(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1:0":     "",
		"127.0.0.1:7373":  "",
		"127.0.0.1:99999": `"127.0.0.1:99999" does not have a port from 0 to 65535; write host:port such as "127.0.0.1:7373"`,
		"localhost":       `"localhost" is not a host:port address; write host:port such as "127.0.0.1:7373"`,
	} {
		got := ""
		if err := CheckListen(addr); err != nil {
			got = err.Error()
		}
		if got != want {
			t.Errorf("CheckListen(%q) = %q, want %q", addr, got, want)
		}
	}
}

func TestValidName(t *testing.T) {
	for name, want := range map[string]bool{"fs": true, "my-server_2": true, "a__b": false, "a b": false, "": false, "é": false} {
		if ValidName(name) != want {
			t.Errorf("%q: %v", name, !want)
		}
	}
}

func TestErrorLocatesField(t *testing.T) {
	in := "{\n  \"mcpServers\": {\n    \"fs\": {\"command\": \"x\", \"comand\": \"y\"}\n  }\n}"
	_, err := Parse("f", []byte(in), env())
	var e *Error
	if !errors.As(err, &e) || e.Line != 3 || e.Column != 28 {
		t.Fatalf("%v at %d:%d", err, e.Line, e.Column)
	}
}

func TestIsolationFields(t *testing.T) {
	cfg, err := Parse("/etc/w/config.json", []byte(`{"mcpServers": {
		"a": {"command": "c", "inheritEnv": ["AWS_PROFILE", "GOPATH"], "sandbox": {"network": false, "paths": {"read": ["data", "/r"], "write": ["~/out"]}}},
		"b": {"command": "c", "inheritEnv": true, "sandbox": {"network": true}},
		"c": {"command": "node", "sandbox": {"container": {"image": "node:22-slim", "engine": "podman"}}}}}`), env())
	if err != nil {
		t.Fatal(err)
	}
	home, _ := os.UserHomeDir()
	a, b := cfg.Servers["a"], cfg.Servers["b"]
	want := Sandbox{NoNetwork: true, Paths: true, Read: []string{"/etc/w/data", "/r"}, Write: []string{filepath.Join(home, "out")}}
	if !slices.Equal(a.InheritEnv, []string{"AWS_PROFILE", "GOPATH"}) || a.InheritAllEnv || !a.Sandbox.Equal(want) {
		t.Errorf("a = %+v %v %+v", a.InheritEnv, a.InheritAllEnv, a.Sandbox)
	}
	if !b.InheritAllEnv || !b.Sandbox.Equal(Sandbox{}) {
		t.Errorf("b = %v %+v", b.InheritAllEnv, b.Sandbox)
	}
	if c := cfg.Servers["c"].Sandbox; !c.Equal(Sandbox{Image: "node:22-slim", Engine: "podman"}) {
		t.Errorf("c = %+v", c)
	}
	for _, tc := range []struct{ in, want string }{
		{`{"url": "http://h/mcp", "sandbox": {"network": false}}`, `mcpServers.s.sandbox: "sandbox" is only for stdio servers`},
		{`{"command": "c", "inheritEnv": "PATH"}`, `mcpServers.s.inheritEnv: is a string, not a list of names or true`},
		{`{"command": "c", "inheritEnv": ["A=B"]}`, `mcpServers.s.inheritEnv[0]: is not a valid environment variable name`},
		{`{"command": "c", "sandbox": {"paths": {"exec": []}}}`, `mcpServers.s.sandbox.paths.exec: unknown field`},
		{`{"command": "c", "sandbox": {"network": "no"}}`, `mcpServers.s.sandbox.network: is a string, not true or false`},
		{`{"command": "c", "sandbox": {"paths": {"read": [""]}}}`, `mcpServers.s.sandbox.paths.read[0]: is empty`},
		{`{"command": "c", "sandbox": {"container": {"engine": "docker"}}}`, `mcpServers.s.sandbox.container: has no "image"`},
		{`{"command": "c", "sandbox": {"container": {"image": "i", "engine": "lxc"}}}`, `mcpServers.s.sandbox.container.engine: "lxc" is not a container engine`},
	} {
		_, err := Parse("f", []byte(`{"mcpServers": {"s": `+tc.in+`}}`), env())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.in, err, tc.want)
		}
	}
}
