package upstream

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"net/http"
	"strings"
	"testing"

	"github.com/wardenmcp/warden/config"
)

// Errors that quote the URL (as net/http does, password masked) or echo a
// secret (an upstream repeating what it was sent, in any common encoding)
// show the URL as written and no secret; harmless text stays readable.
func TestRedactHidesSecrets(t *testing.T) {
	env := map[string]string{"USER": "client-id-42", "PASS": "hunter2pass", "PATHSECRET": "pathsecret123",
		"KEY": "abc+def/ghi=", "TOKEN": "tok-0123456789"}
	cfg, err := config.Parse("/x/config.json", []byte(`{"mcpServers": {"s": {
		"url": "http://${env:USER}:${env:PASS}@127.0.0.1:1/mcp/${env:PATHSECRET}?key=${env:KEY}&format=json",
		"headers": {"Authorization": "Bearer ${env:TOKEN}", "X-Literal": "literal-header-secret"}}}}`),
		func(n string) (string, bool) { v, ok := env[n]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.Servers["s"]
	_, dialErr := http.Post(s.URL, "application/json", nil) // nothing listens on port 1
	if dialErr == nil {
		t.Fatal("want a connection error")
	}
	secrets := []string{"client-id-42", "hunter2pass", "pathsecret123", "abc+def/ghi=", "abc%2Bdef%2Fghi%3D", "abc def/ghi=",
		"tok-0123456789", "literal-header-secret"}
	for _, inner := range []error{
		dialErr,
		errors.New(`upstream answered 404: no route for /mcp/pathsecret123?key=abc%2Bdef%2Fghi%3D&format=json`),
		errors.New(`invalid token "tok-0123456789" for client-id-42 (header literal-header-secret)`),
		errors.New(`bad key abc+def/ghi= (sent as "abc+def/ghi=")`),
	} {
		got := redact(s, inner)
		for _, secret := range secrets {
			if strings.Contains(got.Error(), secret) {
				t.Errorf("redact(%q) = %q: shows %q", inner, got, secret)
			}
		}
		if !errors.Is(got, inner) {
			t.Errorf("redact(%q) no longer wraps the error", inner)
		}
	}
	if got := redact(s, dialErr).Error(); !strings.Contains(got, `"http://127.0.0.1:1/mcp/${env:PATHSECRET}"`) {
		t.Errorf("redact(%q) = %q, want the URL as written, without userinfo and query", dialErr, got)
	}
	// The upstream's own answer goes to the client as it is: masked inside.
	answer := &jsonrpc.Error{Code: -32602, Message: "bad token tok-0123456789", Data: json.RawMessage(`{"echo":"hunter2pass"}`)}
	redact(s, fmt.Errorf("calling %q: %w", "tools/call", answer))
	for _, secret := range secrets {
		if strings.Contains(answer.Message+string(answer.Data), secret) {
			t.Errorf("the upstream's answer still shows %q: %q %s", secret, answer.Message, answer.Data)
		}
	}
	if !json.Valid(answer.Data) {
		t.Errorf("masked data is no longer JSON: %s", answer.Data)
	}
	// A credential in a known format is masked though no config names it.
	own := "ghp_" + "x9Kq2LmZ7vB4nR8tW1yC6pD3sF5gH0jA1kE2"
	if got := redact(s, errors.New("auth failed for "+own)).Error(); strings.Contains(got, own) || !strings.Contains(got, "[REDACTED:github-pat]") {
		t.Errorf("a GitHub token the upstream quoted: %q", got)
	}
	harmless := errors.New("upstream answered 415: want application/json")
	if got := redact(s, harmless); got != harmless {
		t.Errorf("redact(%q) = %q: masked harmless text", harmless, got)
	}
}

// A server's stderr log is masked line by line: a credential in a known
// format, written in two pieces, never reaches the log whole.
func TestStderrLogMasksCredentials(t *testing.T) {
	var out strings.Builder
	w := &redactingWriter{w: &out, cfg: &config.Server{}}
	key := "AKIA" + "Z7Q2WXRTY3UV4PLM"
	for _, part := range []string{"starting with AWS_ACCESS_KEY_ID=" + key[:10], key[10:] + "\nready\n", "last line"} {
		if _, err := w.Write([]byte(part)); err != nil {
			t.Fatal(err)
		}
	}
	w.Flush()
	if got := out.String(); strings.Contains(got, key) || !strings.Contains(got, "[REDACTED:") || !strings.HasSuffix(got, "ready\nlast line") {
		t.Errorf("log %q", got)
	}
}
