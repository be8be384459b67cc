package api

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/wardenmcp/warden/approval"
)

// sseEvent is one server-sent event as read off the wire.
type sseEvent struct {
	id, event string
	data      json.RawMessage
}

// readEvent reads the next event, skipping comments.
func readEvent(t *testing.T, r *bufio.Reader) sseEvent {
	t.Helper()
	var ev sseEvent
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the event stream: %v", err)
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "" && ev.event != "":
			return ev
		case strings.HasPrefix(line, "id: "):
			ev.id = line[len("id: "):]
		case strings.HasPrefix(line, "event: "):
			ev.event = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			ev.data = json.RawMessage(line[len("data: "):])
		}
	}
}

// GET /v1/events streams what happens: here a quarantine, as a tools
// event whose id is its sequence number.
func TestEvents(t *testing.T) {
	e, _, _ := standardEnv(t)
	srv := httptest.NewServer(e.h)
	t.Cleanup(srv.Close)
	resp, _ := openStream(t, srv, "/v1/events")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" || resp.Header.Get("Cache-Control") != "no-cache" {
		t.Fatalf("GET /v1/events: %d %v", resp.StatusCode, resp.Header)
	}
	r := bufio.NewReader(resp.Body)
	// The opening comment is flushed at once: the subscription is in place.
	if line, err := r.ReadString('\n'); err != nil || line != ": warden events\n" {
		t.Fatalf("the stream opens with %q, %v", line, err)
	}

	if rec := e.do("POST", "/v1/servers/fx/quarantine", ""); rec.Code != http.StatusOK {
		t.Fatalf("quarantine: %d %s", rec.Code, rec.Body)
	}
	for {
		ev := readEvent(t, r)
		var got struct {
			Seq    uint64
			Type   string
			Server string
			Data   approval.Change
		}
		if err := json.Unmarshal(ev.data, &got); err != nil {
			t.Fatalf("event data %s: %v", ev.data, err)
		}
		if ev.event != got.Type || ev.id == "" || ev.id != jsonNumber(got.Seq) {
			t.Fatalf("event %s/%s carries %+v", ev.id, ev.event, got)
		}
		if got.Type == "tools" && got.Server == "fx" && got.Data.QuarantineChanged && got.Data.Quarantined {
			return
		}
	}
}

func jsonNumber(n uint64) string { b, _ := json.Marshal(n); return string(b) }

// noFlusher is a ResponseWriter that cannot stream.
type noFlusher struct{ http.ResponseWriter }

// A connection that cannot stream is refused plainly; a client that goes
// away ends the stream.
func TestEventsEnds(t *testing.T) {
	e := newEnv(t, `{}`)
	req := httptest.NewRequest("GET", "/v1/events", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(noFlusher{rec}, req)
	expectError(t, rec, refusal{http.StatusInternalServerError, "no_streaming", []string{"cannot stream"}})

	ctx, cancel := context.WithCancel(context.Background())
	rec = httptest.NewRecorder()
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.h.ServeHTTP(rec, req.WithContext(ctx))
	}()
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the event stream did not end when its client went away")
	}
	if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Body.String(), ": warden events\n") {
		t.Fatalf("stream answered %d %q", rec.Code, rec.Body)
	}
}
