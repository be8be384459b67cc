// Package bridge connects an MCP client that speaks stdio to Warden's
// streamable-HTTP endpoint: each line from the client is POSTed, each message
// that comes back (JSON or server-sent events, including the standalone GET
// stream for notifications) is written to the client as a line. It is
// message-transparent, so everything the endpoint supports works through it.
package bridge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Bridge pumps one stdio client to one endpoint.
type Bridge struct {
	URL    string
	Client *http.Client

	out     io.Writer
	outMu   sync.Mutex
	mu      sync.Mutex
	session string
	version string
	wg      sync.WaitGroup
}

// Run copies messages until in ends or ctx is done, then ends the session.
func (b *Bridge) Run(ctx context.Context, in io.Reader, out io.Writer) error {
	if b.Client == nil {
		b.Client = &http.Client{}
	}
	b.out = out
	listenCtx, stopListen := context.WithCancel(ctx)
	listening := make(chan struct{})
	started := false
	defer func() {
		stopListen()
		if started { // else nothing closes listening (a failed initialize returns early)
			<-listening
		}
	}()
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		msg := append([]byte(nil), line...)
		if isInitialize(msg) {
			// The session id comes back on initialize: later requests need it.
			if err := b.post(ctx, msg); err != nil {
				return err
			}
			if !started {
				started = true
				go func() { defer close(listening); b.listen(listenCtx) }()
			}
			continue
		}
		b.wg.Go(func() {
			if err := b.post(ctx, msg); err != nil {
				b.writeError(msg, err)
			}
		})
	}
	b.wg.Wait()
	b.end()
	return sc.Err()
}

func isInitialize(msg []byte) bool {
	var m struct {
		Method string `json:"method"`
	}
	return json.Unmarshal(msg, &m) == nil && m.Method == "initialize"
}

func (b *Bridge) headers(h http.Header) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.session != "" {
		h.Set("Mcp-Session-Id", b.session)
	}
	if b.version != "" {
		h.Set("Mcp-Protocol-Version", b.version)
	}
}

func (b *Bridge) post(ctx context.Context, msg []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.URL, bytes.NewReader(msg))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	b.headers(req.Header)
	resp, err := b.Client.Do(req)
	if err != nil {
		return fmt.Errorf("cannot reach warden at %s (is \"warden serve\" running?): %w", b.URL, err)
	}
	defer resp.Body.Close()
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
		b.mu.Lock()
		b.session = id
		b.mu.Unlock()
	}
	switch {
	case resp.StatusCode == http.StatusAccepted:
		return nil
	case resp.StatusCode >= 300:
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("warden answered %s: %s", resp.Status, strings.TrimSpace(string(body)))
	case strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream"):
		_, err := b.readEvents(resp.Body)
		return err
	default:
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		b.write(body)
		return nil
	}
}

// listen keeps the standalone GET stream open for server-initiated messages,
// resuming with Last-Event-ID when it drops.
func (b *Bridge) listen(ctx context.Context) {
	lastID := ""
	for ctx.Err() == nil {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.URL, nil)
		if err != nil {
			return
		}
		req.Header.Set("Accept", "text/event-stream")
		b.headers(req.Header)
		if lastID != "" {
			req.Header.Set("Last-Event-ID", lastID)
		}
		resp, err := b.Client.Do(req)
		if err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
			continue
		}
		if resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			return // the endpoint offers no stream (405) or the session is gone
		}
		if id, _ := b.readEvents(resp.Body); id != "" {
			lastID = id
		}
		resp.Body.Close()
	}
}

// readEvents writes each event's data as a line and returns the last event id.
func (b *Bridge) readEvents(r io.Reader) (lastID string, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var data []string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if len(data) > 0 {
				b.write([]byte(strings.Join(data, "\n")))
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

func (b *Bridge) write(msg []byte) {
	msg = bytes.TrimSpace(msg)
	if len(msg) == 0 {
		return
	}
	b.rememberVersion(msg)
	b.outMu.Lock()
	defer b.outMu.Unlock()
	b.out.Write(append(msg, '\n'))
}

// rememberVersion notes the protocol version from the initialize answer.
func (b *Bridge) rememberVersion(msg []byte) {
	b.mu.Lock()
	known := b.version != ""
	b.mu.Unlock()
	if known || !bytes.Contains(msg, []byte(`"protocolVersion"`)) {
		return
	}
	var m struct {
		Result struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"result"`
	}
	if json.Unmarshal(msg, &m) == nil && m.Result.ProtocolVersion != "" {
		b.mu.Lock()
		if b.version == "" {
			b.version = m.Result.ProtocolVersion
		}
		b.mu.Unlock()
	}
}

// writeError answers a request that could not be delivered, so the client is
// not left waiting.
func (b *Bridge) writeError(msg []byte, err error) {
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(msg, &m) != nil || len(m.ID) == 0 {
		return
	}
	resp, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": m.ID,
		"error": map[string]any{"code": -32603, "message": err.Error()}})
	b.write(resp)
}

func (b *Bridge) end() {
	b.mu.Lock()
	session := b.session
	b.mu.Unlock()
	if session == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, b.URL, nil)
	if err != nil {
		return
	}
	b.headers(req.Header)
	if resp, err := b.Client.Do(req); err == nil {
		resp.Body.Close()
	}
}
