package config

import (
	"strings"
	"testing"
)

// A reference Warden cannot expand breaks its server with a message that
// names it (or, when what follows its kind could be anything, its kind)
// and what to write instead; the other servers load.
func TestUnexpandableReferences(t *testing.T) {
	for _, tc := range []struct{ entry, want string }{
		{`{"command": "x", "env": {"K": "${input:token}"}}`,
			`mcpServers.s.env.K: ${input:token} asks VS Code to prompt for a value, which Warden cannot do; write ${env:NAME} instead`},
		{`{"command": "x", "args": ["${foo}"]}`,
			`mcpServers.s.args[0]: ${foo...} is not expanded by Warden; write ${env:foo} to use the environment variable foo; Warden expands ${env:NAME}, ${workspaceFolder}`},
		{`{"command": "x", "args": ["${command:pickFile}"]}`,
			`mcpServers.s.args[0]: ${command:...} is another host's kind of reference, which Warden cannot expand; Warden expands ${env:NAME}, ${workspaceFolder}, ${workspaceFolderBasename}, ${userHome} and ${pathSeparator}; write the value itself or one of those`},
		{`{"url": "https://h/${file:/run/secret}"}`, `mcpServers.s.url: ${file:...} is another host's kind of reference`},
		{`{"command": "x", "args": ["${a.b}"]}`, `mcpServers.s.args[0]: a ${...} reference here is not one Warden can expand`},
		{`{"command": "${env:HOME}/bin/x"}`,
			`mcpServers.s.command: ${env:HOME} is expanded only in args, env, url, headers, oauth, store and storeKey, not here; pass the value to the server in "args" or "env" instead; for the home folder write ${userHome}`},
		{`{"command": "x", "cwd": "${env:DIR}"}`, `mcpServers.s.cwd: ${env:DIR} is expanded only in args, env, url, headers, oauth, store and storeKey`},
	} {
		cfg, err := ParseAll("/p/.vscode/mcp.json", []byte(`{"servers": {"s": `+tc.entry+`, "ok": {"command": "y"}}}`), env("HOME", "/h", "DIR", "/d"))
		if err != nil {
			t.Fatal(err)
		}
		if e := cfg.Broken["s"]; e == nil || !strings.Contains(e.Error(), strings.Replace(tc.want, "mcpServers.", "servers.", 1)) || cfg.Servers["ok"] == nil {
			t.Errorf("%s:\n got %v\nwant %s", tc.entry, e, tc.want)
		}
	}
}

// Path variables expand in every string that is not a secret's, and an
// edit writes them expanded (the file it writes to has another workspace)
// while it keeps ${env:} references as references.
func TestPathVariablesWrittenExpanded(t *testing.T) {
	t.Setenv("HOME", "/home/tester")
	cfg, err := Parse("/work/proj/.cursor/mcp.json", []byte(`{"mcpServers": {
		"s": {"command": "${userHome}/bin/s", "args": ["${workspaceFolder}", "--key=${env:KEY}"], "env": {"D": "${workspaceFolder}/d", "K": "${env:KEY}"}},
		"r": {"url": "https://h/${workspaceFolderBasename}/mcp?k=${env:KEY}", "headers": {"X": "${env:KEY} ${userHome}"}}}}`), env("KEY", marker))
	if err != nil {
		t.Fatal(err)
	}
	s, r := cfg.Servers["s"], cfg.Servers["r"]
	if s.Command != "/home/tester/bin/s" || s.Args[0] != "/work/proj" || s.Args[1] != "--key="+marker || s.Env["D"] != "/work/proj/d" ||
		r.URL != "https://h/proj/mcp?k="+marker || r.Headers["X"] != marker+" /home/tester" {
		t.Fatalf("expanded: %q %q %v %q %v", s.Command, s.Args, s.Env, r.URL, r.Headers)
	}
	_, args, env, _ := s.written()
	url, _, _, headers := r.written()
	if args[0] != "/work/proj" || args[1] != "--key=${env:KEY}" || env["D"] != "/work/proj/d" || env["K"] != "${env:KEY}" ||
		url != "https://h/proj/mcp?k=${env:KEY}" || headers["X"] != "${env:KEY} /home/tester" {
		t.Errorf("written: %q %v %q %v", args, env, url, headers)
	}
	if r.DisplayURL() != "https://h/proj/mcp" {
		t.Errorf("DisplayURL %q", r.DisplayURL())
	}
}
