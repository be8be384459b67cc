package upstream

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wardenmcp/warden/config"
	"github.com/wardenmcp/warden/sessions"
)

// memStore is a SessionStore in memory.
type memStore struct {
	mu  sync.Mutex
	rec *sessions.Record
}

func (m *memStore) Load(string, string) (sessions.Record, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.rec == nil {
		return sessions.Record{}, false
	}
	return *m.rec, true
}
func (m *memStore) Save(r sessions.Record, _ string) error {
	m.mu.Lock()
	m.rec = &r
	m.mu.Unlock()
	return nil
}
func (m *memStore) MarkResumed(string)  {}
func (m *memStore) Delete(string) error { m.mu.Lock(); m.rec = nil; m.mu.Unlock(); return nil }

// Requests that arrive while a resumed session is being probed wait for
// the probe's outcome: when the session turns out dead, they go out on the
// fresh one, never on the dead one or on none.
func TestResumeProbeHoldsConcurrentRequests(t *testing.T) {
	probing, release := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	var seen []string // session ids of the requests other than Warden's own
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch {
		case bytes.Contains(body, []byte("warden-resume-probe")):
			close(probing)
			<-release
			http.Error(w, "no such session", http.StatusNotFound)
		case bytes.Contains(body, []byte(`"initialize"`)):
			w.Header().Set("Mcp-Session-Id", "fresh")
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"up","version":"1"}}}`)
		case bytes.Contains(body, []byte("notifications/initialized")):
			w.WriteHeader(http.StatusAccepted)
		default:
			mu.Lock()
			seen = append(seen, r.Header.Get("Mcp-Session-Id"))
			mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"jsonrpc":"2.0","id":2,"result":{}}`)
		}
	}))
	defer up.Close()
	cfg, err := config.Parse("/x/config.json", []byte(`{"mcpServers": {"up": {"url": "`+up.URL+`/mcp"}}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	store := &memStore{rec: &sessions.Record{SessionID: "dead", ProtocolVersion: "2025-11-25",
		InitResult: []byte(`{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"up","version":"1"}}`)}}
	tr := newSessionTransport(cfg.Servers["up"], store, slog.New(slog.DiscardHandler), nil)
	post := func(body string) error {
		req, _ := http.NewRequest("POST", up.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Mcp-Session-Id", "dead") // as the SDK client sends it after the resumed initialize
		resp, err := tr.RoundTrip(req)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		return err
	}
	if err := post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 2)
	go func() { errs <- post(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`) }()
	<-probing
	go func() { errs <- post(`{"jsonrpc":"2.0","id":3,"method":"prompts/list"}`) }()
	time.Sleep(100 * time.Millisecond) // time for the second request to go out, were it not held
	mu.Lock()
	early := append([]string(nil), seen...)
	mu.Unlock()
	close(release)
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if len(early) != 0 {
		t.Fatalf("requests went out during the probe, on sessions %q", early)
	}
	if strings.Join(seen, ",") != "fresh,fresh" {
		t.Fatalf("requests went out on sessions %q, want both on the fresh one", seen)
	}
}
