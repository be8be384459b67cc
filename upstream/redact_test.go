package upstream

import (
	"errors"
	"strings"
	"testing"

	"github.com/wardenmcp/warden/config"
)

// Errors quoting the live URL (whole, password masked, or only its secret
// parts) show the URL as written, and no secret.
func TestRedactHidesURLSecrets(t *testing.T) {
	env := map[string]string{"PASS": "hunter2pass", "KEY": "k3y-s3cret"}
	cfg, err := config.Parse("/x/config.json", []byte(`{"mcpServers": {"s": {
		"url": "http://user:${env:PASS}@127.0.0.1:9/mcp?key=${env:KEY}&v=1"}}}`),
		func(n string) (string, bool) { v, ok := env[n]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	c := &Conn{}
	c.cfg.Store(cfg.Servers["s"])
	live := cfg.Servers["s"].URL
	for _, msg := range []string{
		`Post "` + live + `": dial tcp 127.0.0.1:9: connect: connection refused`,
		`Post "http://user:***@127.0.0.1:9/mcp?key=k3y-s3cret&v=1": EOF`,
		`upstream answered 404: no route for /mcp?key=k3y-s3cret&v=1`,
		`bad password hunter2pass`,
	} {
		inner := errors.New(msg)
		got := c.redact(inner)
		for _, secret := range env {
			if strings.Contains(got.Error(), secret) {
				t.Errorf("redact(%q) = %q: shows a secret", msg, got)
			}
		}
		if !errors.Is(got, inner) {
			t.Errorf("redact(%q) no longer wraps the error", msg)
		}
	}
	if got := c.redact(errors.New(`Post "` + live + `": EOF`)).Error(); got != `Post "http://127.0.0.1:9/mcp": EOF` {
		t.Errorf("the URL shows as %q, want it as written without userinfo and query", got)
	}
}
