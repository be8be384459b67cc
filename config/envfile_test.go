package config

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wardenmcp/warden/internal/testing/testenv"
)

// A VS Code workspace file as VS Code documents it: ${workspaceFolder} is
// the folder above .vscode/, envFile is read from there, the server's own
// env wins over the file's, and the file's values are secrets.
func TestVSCodeWorkspaceFile(t *testing.T) {
	proj := filepath.Join(t.TempDir(), "proj")
	testenv.WriteFiles(t, proj, map[string]string{
		".env": "# the project's secrets\nexport API_KEY=" + marker + "\nPIN=7f3a9\nMODE='from-file'\nEMPTY=\n",
		".vscode/mcp.json": `{
  "servers": {
    "db": {"type": "stdio", "command": "${workspaceFolder}/bin/db-mcp",
           "args": ["--root", "${workspaceFolder}${/}data", "--name=${workspaceFolderBasename}", "--home=${userHome}", "--sep=${pathSeparator}"],
           "env": {"MODE": "from-env"}, "envFile": "${workspaceFolder}/.env", "cwd": "${workspaceFolder}"}
  }
}`,
	})
	t.Setenv("HOME", "/home/tester")
	cfg, err := Load(filepath.Join(proj, ".vscode", "mcp.json"))
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.Servers["db"]
	wantArgs := []string{"--root", proj + "/data", "--name=proj", "--home=/home/tester", "--sep=/"}
	if s.Command != proj+"/bin/db-mcp" || !slices.Equal(s.Args, wantArgs) || s.Cwd != proj || s.EnvFile != filepath.Join(proj, ".env") {
		t.Fatalf("db: command %q, args %q, cwd %q, envFile %q", s.Command, s.Args, s.Cwd, s.EnvFile)
	}
	if want := map[string]string{"API_KEY": marker, "PIN": "7f3a9", "MODE": "from-env", "EMPTY": ""}; !maps.Equal(s.Env, want) {
		t.Errorf("env %v, want %v", s.Env, want)
	}
	// Masked like an ${env:} expansion: even a value too short to mask as
	// an env value.
	if !slices.Contains(s.Secrets(), marker) || !slices.Contains(s.Secrets(), "7f3a9") {
		t.Errorf("the envFile's values are not among the server's secrets %q", s.Secrets())
	}
	if _, _, env, _ := s.written(); len(env) != 1 || env["MODE"] != "from-env" {
		t.Errorf("written env %v: the envFile's values would be copied into another file", env)
	}
}

// A relative envFile is read from the workspace folder: the folder above
// .vscode/ or .cursor/, else the config file's own folder.
func TestEnvFileRelativeToWorkspace(t *testing.T) {
	dir := t.TempDir()
	testenv.WriteFiles(t, dir, map[string]string{"p/.env": "K=p\n", "p/.cursor/.env": "K=cursor-dir\n", "w/.env": "K=w\n"})
	for file, want := range map[string]string{"p/.vscode/mcp.json": "p", "p/.cursor/mcp.json": "p", "w/config.json": "w"} {
		cfg, err := Parse(filepath.Join(dir, file), []byte(`{"mcpServers": {"s": {"command": "x", "envFile": ".env"}}}`), env())
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if got := cfg.Servers["s"].Env["K"]; got != want {
			t.Errorf("%s: read the .env of %q, want %q", file, got, want)
		}
	}
}

// An envFile that cannot be read or parsed breaks only its server, with a
// message naming the file, the line and the fix, and never the file's text.
func TestEnvFileProblems(t *testing.T) {
	dir := t.TempDir()
	testenv.WriteFiles(t, dir, map[string]string{
		"noeq.env":     "OK=1\n" + marker + "\n",
		"badname.env":  "1" + marker + "=x\n",
		"open.env":     "K=\"" + marker + "\n",
		"trailing.env": "K='" + marker + "' tail\n",
	})
	for _, tc := range []struct{ envFile, want string }{
		{"missing.env", "mcpServers.s.envFile: cannot read " + filepath.Join(dir, "missing.env") + ": no such file or directory; create the file, or correct the path (a relative one is read from " + dir + ")"},
		{"noeq.env", "mcpServers.s.envFile: " + filepath.Join(dir, "noeq.env") + `: line 2 is not NAME=VALUE with a name of letters, digits and "_" (the line is not shown: it may hold a secret); write NAME=VALUE lines, with # for comments`},
		{"badname.env", ": line 1 is not NAME=VALUE"},
		{"open.env", ": line 1 has a quote that does not end on its line"},
		{"trailing.env", ": line 1 has text after its closing quote"},
		{"", `mcpServers.s.envFile: is empty`},
	} {
		file := `{"mcpServers": {"s": {"command": "x", "envFile": "` + tc.envFile + `"}, "ok": {"command": "y"}}}`
		cfg, err := ParseAll(filepath.Join(dir, "config.json"), []byte(file), env())
		if err != nil {
			t.Fatal(err)
		}
		e := cfg.Broken["s"]
		if e == nil || !strings.Contains(e.Error(), tc.want) || cfg.Servers["ok"] == nil {
			t.Errorf("envFile %q: %v, want %s and the other server loaded", tc.envFile, e, tc.want)
		}
		if e != nil && strings.Contains(e.Error(), marker) {
			t.Errorf("envFile %q: the message shows the file's text: %v", tc.envFile, e)
		}
	}
	_, err := Parse(filepath.Join(dir, "config.json"), []byte(`{"mcpServers": {"r": {"url": "https://r.test/mcp", "envFile": "x.env"}}}`), env())
	if err == nil || !strings.Contains(err.Error(), `mcpServers.r.envFile: "envFile" is only for stdio servers`) {
		t.Errorf("envFile on an HTTP server: %v", err)
	}
}

func TestParseDotenv(t *testing.T) {
	vars, _, problem := parseDotenv([]byte(strings.Join([]string{
		"# comment", "", "  PLAIN = some value  ", "export EXPORTED=1", "COMMENTED=v # note", "HASH=a#b",
		`DOUBLE="a \"q\" \\ \n end" # note`, `SINGLE='lit \n $x'`, "URL=https://h/?a=b=c", "CRLF=v\r", "EMPTY=", `REF=${env:X}`,
	}, "\n")))
	want := map[string]string{"PLAIN": "some value", "EXPORTED": "1", "COMMENTED": "v", "HASH": "a#b",
		"DOUBLE": "a \"q\" \\ \n end", "SINGLE": `lit \n $x`, "URL": "https://h/?a=b=c", "CRLF": "v", "EMPTY": "", "REF": "${env:X}"}
	if problem != "" || !maps.Equal(vars, want) {
		t.Errorf("got %q (%s)\nwant %q", vars, problem, want)
	}
	for text, want := range map[string]string{
		"A=1\n=x":       "line 2 is not NAME=VALUE",
		"A B=1":         "line 1 is not NAME=VALUE",
		"A=\"x\x00y\"":  "line 1 the value contains a NUL byte",
		"A=1\nB=\"open": "line 2 has a quote that does not end on its line",
	} {
		_, line, problem := parseDotenv([]byte(text))
		if got := fmt.Sprintf("line %d %s", line, problem); !strings.HasPrefix(got, want) {
			t.Errorf("%q: %s, want %s", text, got, want)
		}
	}
}
