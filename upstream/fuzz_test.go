package upstream

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/answer"
	"github.com/wardenmcp/warden/config"
)

// The direct tools/call path reads what an upstream answers (JSON, or an
// event stream carrying other messages before the answer). These fuzz
// targets play a hostile upstream: a real streamable-HTTP session whose
// tools/call answers are the fuzzer's bytes.

// hostile is an upstream that speaks MCP well enough to be connected to,
// and answers every tools/call with answer, "$ID" in it replaced by the
// call's JSON-RPC id.
type hostile struct {
	mu     sync.Mutex
	answer func(id []byte) (status int, contentType string, body []byte)
}

func (h *hostile) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		if r.Method == http.MethodDelete {
			return
		}
		http.Error(w, "no stream here", http.StatusMethodNotAllowed)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var m rpcMessage
	if json.Unmarshal(body, &m) != nil || len(m.ID) == 0 || m.Method == "" {
		w.WriteHeader(http.StatusAccepted) // a notification, or an answer to the upstream's request
		return
	}
	reply := func(result string) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Mcp-Session-Id", "hostile")
		io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":`+result+`}`)
	}
	switch m.Method {
	case "initialize":
		reply(`{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"hostile","version":"1"}}`)
	case "tools/list":
		reply(`{"tools":[]}`)
	case "tools/call":
		h.mu.Lock()
		answer := h.answer
		h.mu.Unlock()
		status, ct, b := answer(m.ID)
		w.Header().Set("Content-Type", ct)
		w.WriteHeader(status)
		w.Write(b)
	default:
		reply(`{}`)
	}
}

func (h *hostile) set(fn func(id []byte) (int, string, []byte)) {
	h.mu.Lock()
	h.answer = fn
	h.mu.Unlock()
}

// nopPeer takes what the upstream sends on its own and refuses its requests.
type nopPeer struct{}

func (nopPeer) Exposed(string) bool          { return true }
func (nopPeer) Inventory(string, *Inventory) {}
func (nopPeer) StateChanged(string, Status)  {}
func (nopPeer) Ask(context.Context, string, string, mcp.InputRequest) (mcp.InputResponse, error) {
	return nil, errors.New("no questions here")
}
func (nopPeer) Log(context.Context, string, *mcp.LoggingMessageParams)         {}
func (nopPeer) Progress(string, *mcp.ProgressNotificationParams)               {}
func (nopPeer) ResourceUpdated(string, *mcp.ResourceUpdatedNotificationParams) {}

// startHostile connects a Conn to a hostile upstream (once per fuzzing
// process).
func startHostile(f testing.TB) (*hostile, *Conn) {
	h := &hostile{}
	srv := httptest.NewServer(h)
	f.Cleanup(srv.Close)
	c := Start(&config.Server{Name: "hostile", URL: srv.URL + "/mcp", Transport: config.TransportHTTP, CallTimeout: 10 * time.Second},
		Options{Peer: nopPeer{}})
	f.Cleanup(c.Stop)
	if err := c.Ready(context.Background()); err != nil {
		f.Fatal(err)
	}
	return h, c
}

// call runs one tools/call; an answer that makes the call hang fails.
func call(t *testing.T, c *Conn) (*answer.Result, error) {
	var res *answer.Result
	err := c.Do(context.Background(), func(ctx context.Context, cs *mcp.ClientSession) error {
		var err error
		res, err = c.callTool(ctx, cs, &Call{Params: &mcp.CallToolParams{Name: "t", Arguments: json.RawMessage(`{"a":1}`)}})
		return err
	})
	if errors.Is(err, ErrTimeout) {
		t.Fatalf("a complete answer left the call waiting until its timeout: %v", err)
	}
	return res, err
}

// checkResult asserts what a result passed on to the client must be: one
// JSON object, whose isError is what the SDK's client decodes (keys are
// case-sensitive: "ISERROR" is not isError).
func checkResult(t *testing.T, res *answer.Result) {
	t.Helper()
	if res == nil || len(res.Raw) == 0 || res.Raw[0] != '{' || !json.Valid(res.Raw) {
		t.Fatalf("a result that is not one JSON object was accepted: %+v", res)
	}
	var head struct {
		IsError bool `json:"isError"`
	}
	if err := sdkUnmarshal(res.Raw, &head); err != nil {
		t.Fatalf("result %s: %v", res.Raw, err)
	}
	if head.IsError != res.IsError {
		t.Fatalf("result %s read as isError=%v, but it decodes as isError=%v", res.Raw, res.IsError, head.IsError)
	}
}

var fuzzStatuses = []int{200, 200, 200, 202, 400, 401, 429, 500, 503}

// FuzzCallAnswer: whatever an upstream answers a call with, the call
// returns (no hang, no panic), and a result it accepts is one JSON object
// whose isError is read right.
func FuzzCallAnswer(f *testing.F) {
	h, c := startHostile(f)
	f.Fuzz(func(t *testing.T, status uint8, stream bool, body []byte) {
		code := fuzzStatuses[int(status)%len(fuzzStatuses)]
		ct := "application/json"
		if stream {
			ct = "text/event-stream"
		}
		h.set(func(id []byte) (int, string, []byte) {
			return code, ct, bytes.ReplaceAll(body, []byte("$ID"), id)
		})
		res, err := call(t, c)
		if err == nil {
			checkResult(t, res)
		}
	})
}

// sseLineEnds are the line endings an event stream may use.
var sseLineEnds = []string{"\n", "\r\n", "\r"}

// FuzzCallAnswerAfterNoise: an event stream that carries whatever events
// before the answer still yields exactly the answer's result, whichever
// line ending the answer's event is written with.
func FuzzCallAnswerAfterNoise(f *testing.F) {
	h, c := startHostile(f)
	f.Fuzz(func(t *testing.T, noise, result []byte, eventID bool, eol uint8) {
		var compact bytes.Buffer
		if bytes.Contains(noise, []byte("$ID")) || json.Compact(&compact, result) != nil || compact.Len() == 0 || compact.Bytes()[0] != '{' {
			t.Skip("not a stream whose only answer is the last event")
		}
		want := compact.Bytes()
		if answer.MayHold(want, mcp.MetaKeyServerInfo) {
			t.Skip("a result that names its server, which is not passed on (see FuzzRawResult)")
		}
		nl := sseLineEnds[int(eol)%len(sseLineEnds)]
		h.set(func(id []byte) (int, string, []byte) {
			var b bytes.Buffer
			b.Write(noise)
			b.WriteString("\n\n")
			if eventID {
				b.WriteString("id: " + strconv.Itoa(len(noise)) + nl)
			}
			b.WriteString(`data: {"jsonrpc":"2.0","id":` + string(id) + `,"result":`)
			b.Write(want)
			b.WriteString("}" + nl + nl)
			return http.StatusOK, "text/event-stream", b.Bytes()
		})
		res, err := call(t, c)
		if err != nil {
			t.Fatalf("the answer after %q, its lines ending in %q, was missed: %v", noise, nl, err)
		}
		checkResult(t, res)
		if !bytes.Equal(res.Raw, want) {
			t.Fatalf("result %s, want %s", res.Raw, want)
		}
	})
}

// wireCase is what the raw upstream of FuzzWireResponse answers a fuzzed
// exchange with, and whether it keeps the connection open after.
type wireCase struct {
	raw  []byte
	keep bool
}

// serveWire answers the requests on c: "check" with a 200 "ok", anything
// else with the current case's bytes.
func serveWire(c net.Conn, cur *atomic.Pointer[wireCase]) {
	defer c.Close()
	br := bufio.NewReader(c)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		body, _ := io.ReadAll(req.Body)
		if string(body) == "check" {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
			continue
		}
		wc := cur.Load()
		c.Write(wc.raw)
		if !wc.keep {
			return
		}
	}
}

// FuzzWireResponse: whatever bytes an upstream answers a POST with on the
// inline HTTP/1.1 transport (upstream/wire.go), the exchange ends, and
// nothing left of it becomes the answer to the next request on the pool.
func FuzzWireResponse(f *testing.F) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { ln.Close() })
	var cur atomic.Pointer[wireCase]
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go serveWire(c, &cur)
		}
	}()
	tr := newWireTransport()
	f.Cleanup(tr.CloseIdleConnections)
	url := "http://" + ln.Addr().String() + "/mcp"
	exchange := func(ctx context.Context, body string) (*http.Response, []byte, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
		resp, err := tr.RoundTrip(req)
		if err != nil {
			return nil, nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return resp, b, err
	}
	f.Fuzz(func(t *testing.T, raw []byte, keep bool) {
		cur.Store(&wireCase{raw: raw, keep: keep})
		// A body that never ends is cut by the call's end.
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		exchange(ctx, "fuzz")
		cancel()
		// A connection closed under a request that reused it may fail that
		// request; what must never happen is another answer than its own.
		for try := 0; ; try++ {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			resp, body, err := exchange(ctx, "check")
			cancel()
			if err == nil {
				if resp.StatusCode != http.StatusOK || string(body) != "ok" {
					t.Fatalf("after an exchange answered %q, the next was answered %d %q", raw, resp.StatusCode, body)
				}
				return
			}
			if try == 2 {
				t.Fatalf("after an exchange answered %q, the next failed three times: %v", raw, err)
			}
		}
	})
}
