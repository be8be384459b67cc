package daemon

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/wardenmcp/warden/config"
)

func TestWarnInheritAll(t *testing.T) {
	var logs strings.Builder
	d := &Daemon{log: slog.New(slog.NewTextHandler(&logs, nil))}
	cfg, err := config.Parse("f", []byte(`{"mcpServers": {"all": {"command": "c", "inheritEnv": true}, "some": {"command": "c", "inheritEnv": ["A"]}}}`), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	d.warnInheritAll(cfg)
	if out := logs.String(); !strings.Contains(out, "server=all") || strings.Contains(out, "server=some") {
		t.Errorf("warnings:\n%s", out)
	}
}
