package e2e

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/wardenmcp/warden/internal/testenv"
	"github.com/wardenmcp/warden/internal/wardentest"
)

// A secret expanded into a server's URL never shows: not in status, events,
// the log, or a refusal an agent reads, even when every connection attempt
// fails with Go's errors that quote the URL.
func TestURLSecretNeverShown(t *testing.T) {
	const secret = "sk-url-secret-93e1"
	t.Setenv("UPSTREAM_KEY", secret)
	down := "http://127.0.0.1:" + itoa(testenv.FreePort(t)) + "/mcp?key=${env:UPSTREAM_KEY}"
	w := wardentest.Start(t, map[string]any{"down": map[string]any{"url": down, "trusted": true, "callTimeout": "1s"}})

	events, err := http.NewRequest("GET", w.URL("/v1/events"), nil)
	if err != nil {
		t.Fatal(err)
	}
	events.Header.Set("Authorization", "Bearer "+w.Token)
	resp, err := http.DefaultClient.Do(events)
	if err != nil {
		t.Fatal(err)
	}
	var streamed strings.Builder
	read := make(chan struct{})
	go func() { io.Copy(&streamed, resp.Body); close(read) }()

	var st struct{ Connection struct{ Error string } }
	wardentest.WaitFor(t, 20*time.Second, "a failed connection attempt", func() bool {
		w.API(t, "GET", "/v1/servers/down", nil, &st)
		return st.Connection.Error != ""
	})
	if !strings.Contains(st.Connection.Error, "127.0.0.1") {
		t.Fatalf("the error should still say where: %q", st.Connection.Error)
	}
	cs := w.Connect(t, "/mcp/down", nil)
	refusal := resultText(callResult(t, cs, "echo", map[string]any{}))

	time.Sleep(100 * time.Millisecond) // let the events of the refusal arrive
	resp.Body.Close()
	<-read
	for what, text := range map[string]string{
		"/v1/servers": st.Connection.Error, "refusal": refusal, "log": w.Logs.String(), "events": streamed.String(),
	} {
		if strings.Contains(text, secret) {
			t.Errorf("the URL secret shows in the %s: %s", what, text)
		}
	}
}
