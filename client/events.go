package client

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/wardenmcp/warden/events"
)

// EventStream is an open /v1/events stream.
type EventStream struct {
	body io.Closer
	sc   *bufio.Scanner
}

// Events subscribes to /v1/events. When it returns, the daemon has the
// subscription: every event published after that is delivered. The stream
// ends with ctx or Close.
func (c *Client) Events(ctx context.Context) (*EventStream, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/v1/events", nil)
	if err != nil {
		return nil, err
	}
	c.authorize(req)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := c.HTTPClient.Do(req)
	if err != nil {
		return nil, connErr(c.where, err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return nil, apiError(resp.StatusCode, data)
	}
	s := &EventStream{body: resp.Body, sc: bufio.NewScanner(resp.Body)}
	s.sc.Buffer(nil, maxAnswer)
	// The daemon subscribes before it writes its opening comment.
	if !s.sc.Scan() {
		resp.Body.Close()
		return nil, fmt.Errorf("warden at %s: the event stream ended at once", c.where)
	}
	return s, nil
}

// Next returns the next event.
func (s *EventStream) Next() (events.Event, error) {
	for s.sc.Scan() {
		data, ok := strings.CutPrefix(s.sc.Text(), "data: ")
		if !ok {
			continue
		}
		var e events.Event
		if err := json.Unmarshal([]byte(data), &e); err != nil {
			return e, fmt.Errorf("an event the CLI cannot read: %w", err)
		}
		return e, nil
	}
	if err := s.sc.Err(); err != nil {
		return events.Event{}, err
	}
	return events.Event{}, io.EOF
}

// Close ends the stream.
func (s *EventStream) Close() error { return s.body.Close() }
