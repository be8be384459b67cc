package metrics

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func scrape(t *testing.T, m *Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("/metrics answered %d", rec.Code)
	}
	b, _ := io.ReadAll(rec.Body)
	return string(b)
}

func mustHave(t *testing.T, body string, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if !strings.Contains(body, l+"\n") {
			t.Errorf("metrics lack %q\n%s", l, body)
		}
	}
}

func TestCallsByServerClassOutcome(t *testing.T) {
	m := New("")
	m.ObserveCall("fs", "read", "ok", time.Millisecond)
	m.ObserveCall("fs", "read", "ok", 2*time.Millisecond)
	m.ObserveCall("fs", "write", "refused", 0)
	m.ObserveCall("db", "", "error", time.Second)
	body := scrape(t, m)
	mustHave(t, body,
		`warden_tool_calls_total{class="read",outcome="ok",server="fs"} 2`,
		`warden_tool_calls_total{class="write",outcome="refused",server="fs"} 1`,
		`warden_tool_calls_total{class="unknown",outcome="error",server="db"} 1`,
		`warden_tool_call_duration_seconds_count{server="fs"} 3`,
		`warden_tool_call_duration_seconds_count{server="db"} 1`,
	)
}

func TestStateIsOneHotPerServer(t *testing.T) {
	m := New("")
	m.SetState("fs", "connecting")
	m.SetState("fs", "ready")
	m.SetState("db", "backoff")
	body := scrape(t, m)
	mustHave(t, body,
		`warden_upstream_state{server="fs",state="ready"} 1`,
		`warden_upstream_state{server="fs",state="connecting"} 0`,
		`warden_upstream_state{server="fs",state="backoff"} 0`,
		`warden_upstream_state{server="fs",state="stopped"} 0`,
		`warden_upstream_state{server="db",state="backoff"} 1`,
		`warden_upstream_state{server="db",state="ready"} 0`,
	)
}

func TestSessionEvents(t *testing.T) {
	m := New("")
	m.SessionEvent("remote", "resumed")
	m.SessionEvent("remote", "resumed")
	m.SessionEvent("remote", "fresh")
	mustHave(t, scrape(t, m),
		`warden_upstream_sessions_total{event="resumed",server="remote"} 2`,
		`warden_upstream_sessions_total{event="fresh",server="remote"} 1`,
	)
}

func TestForgetDropsAServersSeries(t *testing.T) {
	m := New("")
	m.SetState("gone", "stopped")
	m.SetState("kept", "ready")
	m.ObserveCall("gone", "read", "ok", time.Millisecond)
	m.Forget("gone")
	body := scrape(t, m)
	if strings.Contains(body, `warden_upstream_state{server="gone"`) || strings.Contains(body, `warden_tool_call_duration_seconds_count{server="gone"}`) {
		t.Fatalf("a forgotten server still has state or latency series:\n%s", body)
	}
	mustHave(t, body, `warden_upstream_state{server="kept",state="ready"} 1`)
}

func TestNilMetricsRecordNothing(t *testing.T) {
	var m *Metrics
	m.ObserveCall("s", "read", "ok", time.Millisecond)
	m.SetState("s", "ready")
	m.SessionEvent("s", "fresh")
	m.Forget("s")
}

// With an instance, every series carries it.
func TestInstanceLabel(t *testing.T) {
	m := New("host:7373")
	m.ObserveCall("fs", "read", "ok", time.Millisecond)
	m.SetState("fs", "ready")
	mustHave(t, scrape(t, m),
		`warden_tool_calls_total{class="read",outcome="ok",server="fs",warden_instance="host:7373"} 1`,
		`warden_upstream_state{server="fs",state="ready",warden_instance="host:7373"} 1`,
	)
}
