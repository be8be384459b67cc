package api

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/wardenmcp/warden/activity"
	"github.com/wardenmcp/warden/internal/testing/wardentest/parts"
)

// GET /v1/activity answers recent calls newest first, by server and
// limit, with the arguments' hash and never the arguments.
func TestActivity(t *testing.T) {
	e := callEnv(t)
	e.call("w", fmt.Sprintf(`{"tool": "echo", "arguments": {"note": %q}}`, argSecret)) // (under "secret" it would be refused ARGUMENTS_BLOCKED)
	e.call("w", `{"tool": "read_value"}`)
	e.call("q", `{"tool": "echo"}`) // refused: quarantined

	var entries []activity.Entry
	parts.WaitFor(t, 10*time.Second, "three calls in the activity log", func() bool {
		decodeInto(t, e.do("GET", "/v1/activity", ""), &entries)
		return len(entries) == 3
	})
	rec := e.do("GET", "/v1/activity", "")
	if strings.Contains(rec.Body.String(), argSecret) {
		t.Fatalf("GET /v1/activity shows a call's arguments: %s", rec.Body)
	}
	hash := regexp.MustCompile(`^[0-9a-f]{64}$`)
	want := []struct{ server, tool, outcome, code string }{
		{"q", "echo", "refused", "SERVER_QUARANTINED"}, {"w", "read_value", "ok", ""}, {"w", "echo", "ok", ""},
	}
	for i, w := range want {
		got := entries[i]
		if got.Server != w.server || got.Tool != w.tool || got.Outcome != w.outcome || got.Code != w.code || got.Surface != "cli" || got.At.IsZero() {
			t.Errorf("entry %d: %+v; want %+v from the cli", i, got, w)
		}
		if w.outcome == "ok" && (got.Class != "read" || !hash.MatchString(got.ArgsSHA256)) {
			t.Errorf("entry %d: class %q args_sha256 %q; want read and a SHA-256", i, got.Class, got.ArgsSHA256)
		}
	}

	tests := []struct {
		query string
		tools []string
	}{
		{"?server=w", []string{"read_value", "echo"}},
		{"?server=w&limit=1", []string{"read_value"}},
		{"?limit=2", []string{"echo", "read_value"}},
		{"?limit=nonsense", []string{"echo", "read_value", "echo"}}, // the default
		{"?limit=-1", []string{"echo", "read_value", "echo"}},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			var got []activity.Entry
			rec := e.do("GET", "/v1/activity"+tt.query, "")
			decodeInto(t, rec, &got)
			var tools []string
			for _, g := range got {
				tools = append(tools, g.Tool)
			}
			if rec.Code != http.StatusOK || strings.Join(tools, ",") != strings.Join(tt.tools, ",") {
				t.Errorf("GET /v1/activity%s: %d %v; want %v", tt.query, rec.Code, tools, tt.tools)
			}
		})
	}
}

// A configured server without calls has an empty list, not null and not
// an error.
func TestActivityOfServerWithoutCalls(t *testing.T) {
	e := callEnv(t)
	rec := e.do("GET", "/v1/activity?server=q", "")
	if rec.Code != http.StatusOK || strings.TrimSpace(rec.Body.String()) != "[]" {
		t.Fatalf("GET /v1/activity?server=q: %d %s; want 200 []", rec.Code, rec.Body)
	}
}
