package surface

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
)

// What the SDK logs per message or per probe goes to debug; its other
// errors stay errors.
func TestSDKLog(t *testing.T) {
	var buf bytes.Buffer
	log := sdkLog(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})), "/mcp")
	ctx := context.Background()
	log.Info("server session connected")
	log.Warn("calling notifications/tools/list_changed: no stream")
	log.Error("method removed in the new protocol", "method", "ping")
	if buf.Len() != 0 {
		t.Errorf("logged at info:\n%s", &buf)
	}
	log.ErrorContext(ctx, "something else broke")
	if !strings.Contains(buf.String(), "level=ERROR") || !strings.Contains(buf.String(), "endpoint=/mcp") {
		t.Errorf("an SDK error was not logged as one with its endpoint:\n%s", &buf)
	}
}
