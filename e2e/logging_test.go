package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/internal/testing/wardentest"
)

// Warden's log says who: a client's session line names the endpoint, the
// client and the session id; a client without an open event stream (which
// is normal) is no warning at every list change; stopping says what stops
// and that Warden stopped. Before, the SDK's "server connecting" and
// "session initialized" named no one, each undelivered list_changed was a
// WARN, and a stop logged nothing.
func TestLogNamesWhoAndStaysQuiet(t *testing.T) {
	up := fixture.NewServer(fixture.Options{})
	w := wardentest.Start(t, map[string]any{"s": map[string]any{"url": up.Serve(t), "trusted": true}})
	w.WaitReady(t, "s")

	c := mcp.NewClient(&mcp.Implementation{Name: "quiet-client", Version: "2.1"}, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: w.URL("/mcp"), DisableStandaloneSSE: true}, wardentest.Session2025)
	if err != nil {
		t.Fatal(err)
	}

	stop := make(chan struct{})
	changed := make(chan bool, 1)
	go func() { changed <- up.ChangeToolsUntil(stop, 30*time.Second) }()
	wardentest.WaitFor(t, 30*time.Second, "a list_changed Warden could not send", func() bool {
		return strings.Contains(w.Logs.String(), "calling notifications/tools/list_changed")
	})
	close(stop)
	<-changed
	cs.Close()
	wardentest.WaitFor(t, 10*time.Second, "a line that the client's session ended", func() bool {
		return strings.Contains(w.Logs.String(), `level=INFO msg="client session ended" endpoint=/mcp session=`+cs.ID()+` client="quiet-client 2.1"`)
	})

	w.Stop()
	logs := w.Logs.String()
	lines := strings.Split(strings.TrimSpace(logs), "\n")
	var initialized string
	for _, l := range lines {
		switch {
		case strings.Contains(l, "calling notifications/") && !strings.Contains(l, "level=DEBUG"),
			strings.Contains(l, `msg="server connecting"`) && !strings.Contains(l, "level=DEBUG"),
			strings.Contains(l, `msg="server session connected"`) && !strings.Contains(l, "level=DEBUG"),
			strings.Contains(l, `msg="session initialized"`) && !strings.Contains(l, "level=DEBUG"):
			t.Errorf("a line that should be at debug: %s", l)
		case strings.Contains(l, `msg="client session initialized"`) && strings.Contains(l, "quiet-client"):
			initialized = l
		}
	}
	for _, want := range []string{"level=INFO", "endpoint=/mcp ", "session=" + cs.ID() + " ", `client="quiet-client 2.1"`, "protocol=2025-11-25"} {
		if !strings.Contains(initialized, want) {
			t.Errorf("the client's session line %q lacks %q", initialized, want)
		}
	}
	for _, want := range []string{`level=INFO msg="stopping warden`, `level=INFO msg="upstream stopped" server=s`} {
		if !strings.Contains(logs, want) {
			t.Errorf("the log of a stop lacks %q", want)
		}
	}
	if last := lines[len(lines)-1]; !strings.Contains(last, `level=INFO msg="warden stopped"`) {
		t.Errorf("the last line is %q, want warden stopped", last)
	}
	if t.Failed() {
		t.Logf("log:\n%s", logs)
	}
}
