package upstream

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/wardenmcp/warden/config"
)

// A stdio server that stops reading cannot hold a write (and with it the
// write gate) forever: the write fails at its deadline.
func TestStdinWriteHasADeadline(t *testing.T) {
	defer func(d time.Duration) { stdinTimeout = d }(stdinTimeout)
	stdinTimeout = 200 * time.Millisecond
	tr := &stdioTransport{cfg: &config.Server{Name: "deaf", Command: "sh", Args: []string{"-c", "sleep 30"}},
		stderr: io.Discard, graceTime: 100 * time.Millisecond}
	conn, err := tr.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	id, _ := jsonrpc.MakeID("1")
	big := json.RawMessage(`{"pad":"` + strings.Repeat("a", 1<<20) + `"}`) // far more than a pipe holds
	done := make(chan error, 1)
	go func() {
		done <- conn.Write(context.Background(), &jsonrpc.Request{ID: id, Method: "tools/call", Params: big})
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a write to a server that never reads succeeded")
		}
	case <-time.After(30 * time.Second): // without a deadline it would block for good
		t.Fatal("the write to a server that never reads is still blocked")
	}
}
