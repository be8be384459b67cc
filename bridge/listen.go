package bridge

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"time"
)

// listen keeps the standalone GET stream open for server-initiated messages,
// resuming with Last-Event-ID when it drops, and following the session to a
// new one when Warden no longer knows it.
func (b *Bridge) listen(ctx context.Context) {
	lastID, lastSession := "", ""
	var wait time.Duration
	for ctx.Err() == nil {
		if wait > 0 {
			select {
			case <-ctx.Done():
				return
			case <-b.renewed:
			case <-time.After(wait):
			}
		}
		session, version := b.current()
		if session != lastSession {
			lastID, lastSession = "", session
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.URL, nil)
		if err != nil {
			return
		}
		req.Header.Set("Accept", "text/event-stream")
		b.setHeaders(req.Header, session, version)
		if lastID != "" {
			req.Header.Set("Last-Event-ID", lastID)
		}
		resp, err := b.Client.Do(req)
		if err != nil {
			wait = time.Second
			continue
		}
		switch {
		case resp.StatusCode == http.StatusNotFound && session != "":
			resp.Body.Close()
			// Warden restarted or closed the session: start a new one. The
			// wait grows until a stream opens, so an endpoint that keeps
			// answering 404 (say, its server was removed) is not hammered.
			if b.renew(ctx, session) == nil {
				select { // not woken by its own renewal
				case <-b.renewed:
				default:
				}
			}
			wait = min(max(2*wait, 100*time.Millisecond), 30*time.Second)
			continue
		case resp.StatusCode != http.StatusOK:
			resp.Body.Close()
			return // the endpoint offers no stream (405)
		}
		if id, _ := readEvents(resp.Body, b.write); id != "" {
			lastID = id
		}
		resp.Body.Close()
		wait = 0
	}
}

// readEvents passes each event's data to emit and returns the last event id.
func readEvents(r io.Reader, emit func([]byte)) (lastID string, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	var data []string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if len(data) > 0 {
				if msg := bytes.TrimSpace([]byte(strings.Join(data, "\n"))); len(msg) > 0 {
					emit(msg)
				}
				data = data[:0]
			}
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		case strings.HasPrefix(line, "id:"):
			lastID = strings.TrimSpace(strings.TrimPrefix(line, "id:"))
		}
	}
	return lastID, sc.Err()
}
