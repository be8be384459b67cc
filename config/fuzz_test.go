package config

import (
	"bytes"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
)

// fuzzEnv is the environment the fuzzed files expand ${env:} from; its
// values are secrets that no error may show.
var fuzzEnv = map[string]string{"TOKEN": "tok-5ecret-value", "HOST": "h0st-5ecret.internal", "PORT": "8080", "EMPTY": ""}

func fuzzLookup(name string) (string, bool) {
	v, ok := fuzzEnv[name]
	return v, ok
}

// FuzzParse: every file either loads or is refused with an *Error that
// names the field (or, for the file as a whole, the line) and never shows
// an expanded value; a loaded server written back the way `warden servers
// add` writes it loads again as the same server.
func FuzzParse(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		const path = "/etc/warden/config.json"
		cfg, err := Parse(path, data, fuzzLookup)
		if err != nil {
			checkParseError(t, data, err)
			return
		}
		if cfg.Servers == nil || cfg.Listen == "" || cfg.Activity.MaxEntries <= 0 || cfg.Activity.MaxAge <= 0 {
			t.Fatalf("loaded config without its defaults: %+v", cfg)
		}
		for _, name := range slices.Sorted(maps.Keys(cfg.Servers)) {
			s := cfg.Servers[name]
			if s.Name != name || !ValidName(name) {
				t.Fatalf("server %q loaded under the name %q", s.Name, name)
			}
			switch s.Transport {
			case TransportStdio, TransportHTTP, TransportSSE:
			default:
				t.Fatalf("server %s loaded with transport %q", name, s.Transport)
			}
			if s.CallTimeout <= 0 {
				t.Fatalf("server %s loaded with callTimeout %s", name, s.CallTimeout)
			}
			e := &editor{nl: "\n", unit: "  "}
			again := `{"mcpServers": {` + quote(name) + ": " + e.encodeServer(s, "  ") + "}}"
			back, err := Parse(path, []byte(again), fuzzLookup)
			if err != nil {
				t.Fatalf("server %s written back does not load: %v\n%s", name, err, again)
			}
			b := back.Servers[name]
			if !s.Equal(b) || s.Fingerprint() != b.Fingerprint() || s.DisplayURL() != b.DisplayURL() {
				t.Fatalf("server %s written back loads as another server:\n%#v\n%#v\n%s", name, *s, *b, again)
			}
		}
	})
}

func checkParseError(t *testing.T, data []byte, err error) {
	t.Helper()
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("error %T %v is not a *config.Error", err, err)
	}
	msg := err.Error()
	if ce.File == "" || !strings.Contains(msg, ce.File) || ce.Problem == "" || !strings.Contains(msg, ce.Problem) {
		t.Fatalf("error %q does not name the file and the problem", msg)
	}
	switch {
	case ce.Field != "":
		if !strings.Contains(msg, ce.Field) {
			t.Fatalf("error %q does not show its field %q", msg, ce.Field)
		}
	case ce.Line > 0 && ce.Column > 0:
	default:
		t.Fatalf("error %q names neither a field nor a line", msg)
	}
	for _, v := range fuzzEnv {
		if strings.Contains(v, "5ecret") && strings.Contains(msg, v) && !bytes.Contains(data, []byte(v)) {
			t.Fatalf("error %q shows the value of an environment variable", msg)
		}
	}
}

// FuzzParseCodex: a Codex config.toml either loads or is refused with an
// *Error, never a panic, a hang or a stack overflow.
func FuzzParseCodex(f *testing.F) {
	f.Add([]byte(codexConfig))
	f.Add([]byte("[mcp_servers.a]\ncommand = \"x\"\nargs = [[[1]]]\nenv = {A = {B = 1}}\n"))
	f.Add([]byte("[mcp_servers.a.b.c]\nx.y.z = 1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := ParseCodex("/c.toml", data); err != nil {
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("%T %v, want an *Error", err, err)
			}
		}
	})
}
