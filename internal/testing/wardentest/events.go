package wardentest

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// Event is one event of GET /v1/events: the SSE event name and its JSON
// data decoded into the fields every event has (Type and Server empty when
// the data is not JSON; Raw keeps it as sent).
type Event struct {
	Name   string          `json:"-"`
	Type   string          `json:"type"`
	Server string          `json:"server"`
	Data   json.RawMessage `json:"data"`
	Raw    string          `json:"-"`
}

// Events follows the daemon's GET /v1/events for one test. It keeps the
// whole raw stream (for tests that look for what must never be streamed)
// and every event in order, read with Next or Await; nothing is dropped,
// however slowly the test reads.
type Events struct {
	mu    sync.Mutex
	raw   strings.Builder
	list  []Event
	next  int // the first event Next has not returned
	ended bool
	more  chan struct{} // signalled when an event arrives or the stream ends

	cancel context.CancelFunc
	done   chan struct{}
}

// FollowEvents opens GET /v1/events with the operator token; the stream is
// closed by Stop or at the end of the test.
func (w *Warden) FollowEvents(t testing.TB) *Events {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, w.URL("/v1/events"), nil)
	req.Header.Set("Authorization", "Bearer "+w.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		cancel()
		resp.Body.Close()
		t.Fatalf("GET /v1/events: %s %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	e := &Events{more: make(chan struct{}, 1), cancel: cancel, done: make(chan struct{})}
	go e.read(resp)
	t.Cleanup(e.Stop)
	return e
}

// read records the stream until it ends.
func (e *Events) read(resp *http.Response) {
	defer close(e.done)
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	var cur Event
	for {
		line, err := r.ReadString('\n')
		e.mu.Lock()
		e.raw.WriteString(line)
		e.mu.Unlock()
		if err != nil {
			break
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case strings.HasPrefix(line, "event: "):
			cur.Name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.Raw += strings.TrimPrefix(line, "data: ")
		case line == "" && cur.Raw != "":
			ev := Event{Name: cur.Name, Raw: cur.Raw}
			_ = json.Unmarshal([]byte(ev.Raw), &ev)
			e.mu.Lock()
			e.list = append(e.list, ev)
			e.mu.Unlock()
			e.signal()
			cur = Event{}
		case line == "":
			cur = Event{}
		}
	}
	e.mu.Lock()
	e.ended = true
	e.mu.Unlock()
	e.signal()
}

func (e *Events) signal() {
	select {
	case e.more <- struct{}{}:
	default:
	}
}

// Raw is everything the stream has carried so far, as sent.
func (e *Events) Raw() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.raw.String()
}

// Stop ends the stream and waits until all it carried is recorded.
func (e *Events) Stop() {
	e.cancel()
	<-e.done
}

// Next returns the next event not yet returned, waiting up to timeout for
// it; false when none came in time or the stream ended.
func (e *Events) Next(timeout time.Duration) (Event, bool) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		e.mu.Lock()
		if e.next < len(e.list) {
			ev := e.list[e.next]
			e.next++
			e.mu.Unlock()
			return ev, true
		}
		ended := e.ended
		e.mu.Unlock()
		if ended {
			return Event{}, false
		}
		select {
		case <-e.more:
		case <-timer.C:
			return Event{}, false
		}
	}
}

// Await reads events until one satisfies match and returns it; it fails
// the test if none does within timeout or the stream ends first.
func (e *Events) Await(t testing.TB, timeout time.Duration, what string, match func(Event) bool) Event {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ev, ok := e.Next(time.Until(deadline))
		if ok && match(ev) {
			return ev
		}
		if ok {
			continue
		}
		e.mu.Lock()
		ended := e.ended
		e.mu.Unlock()
		if ended {
			t.Fatalf("the event stream ended before %s", what)
		}
		t.Fatalf("no event within %s: %s", timeout, what)
	}
}
