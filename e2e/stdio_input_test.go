package e2e

import (
	"bufio"
	"encoding/json"
	"io"
	"os/exec"
	"testing"
	"time"

	"github.com/wardenmcp/warden/internal/testing/testenv"
	"github.com/wardenmcp/warden/internal/testing/wardentest"
)

// stdioLine is one message `warden stdio` wrote.
type stdioLine struct {
	Raw    json.RawMessage `json:"-"` // the whole line
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// Break 9: `warden stdio` answers a line that is not JSON with -32700 and
// JSON that is not a message with -32600, with id null unless the message
// had a usable id (as JSON-RPC 2.0 says), and goes on serving the next
// good line. Before, it answered nothing and the client waited for good.
func TestStdioAnswersBadInput(t *testing.T) {
	fx := testenv.BuildBinary(t, fixturePkg)
	p := wardentest.ServeProcess(t, "", map[string]any{"up": map[string]any{"command": fx, "trusted": true}})
	wardentest.WaitFor(t, 20*time.Second, "up ready", func() bool { return serverState(statusOf(t, p), "up") == "ready" })

	cmd := exec.Command(testenv.BuildBinary(t, "./cmd/warden"), "stdio", "--config", p.ConfigPath, "--state-dir", p.StateDir)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	bridge := testenv.StartProcess(t, cmd)
	lines := make(chan stdioLine)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var l stdioLine
			_ = json.Unmarshal(sc.Bytes(), &l) // a batch is no object: Raw has it
			l.Raw = append(json.RawMessage(nil), sc.Bytes()...)
			lines <- l
		}
		close(lines)
	}()
	next := func(what string) stdioLine {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("warden stdio ended before answering %s\n%s", what, bridge.Output())
			}
			return l
		case <-time.After(10 * time.Second):
			t.Fatalf("warden stdio answered nothing to %s in 10s", what)
		}
		return stdioLine{}
	}
	send := func(line string) {
		t.Helper()
		if _, err := io.WriteString(in, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	expectError := func(line, id string, code int) {
		t.Helper()
		send(line)
		l := next(line)
		if l.Error == nil || l.Error.Code != code || string(l.ID) != id || l.Error.Message == "" {
			t.Fatalf("answer to %s: %s; want error %d with id %s", line, l.Raw, code, id)
		}
	}

	expectError(`garbage{`, "null", -32700)
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if l := next("initialize"); l.Error != nil || string(l.ID) != "1" {
		t.Fatalf("initialize answered %s", l.Raw)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	expectError(`garbage{`, "null", -32700)
	expectError(`[]`, "null", -32600)
	expectError(`{"id":7}`, "7", -32600)
	expectError(`{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}`, "null", -32600)
	expectError(`"just a string"`, "null", -32600)

	// A batch, which this session's revision (2025-11-25) has not: each
	// request in it is answered, in a batch, with Warden's refusal.
	send(`[{"jsonrpc":"2.0","id":20,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/progress","params":{}},{"jsonrpc":"2.0","id":"21","method":"ping"}]`)
	var batch []stdioLine
	select {
	case <-time.After(10 * time.Second):
		t.Fatal("warden stdio answered nothing to a batch in 10s")
	case l := <-lines:
		_ = json.Unmarshal(l.Raw, &batch)
		if len(batch) != 2 || string(batch[0].ID) != "20" || string(batch[1].ID) != `"21"` || batch[0].Error == nil || batch[0].Error.Code != -32600 {
			t.Fatalf("the answer to a batch of two requests and a notification: %s", l.Raw)
		}
	}

	send(`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"up__echo","arguments":{"after":"bad lines"}}}`)
	l := next("a tools/call after the bad lines")
	if l.Error != nil || string(l.ID) != "8" || len(l.Result) == 0 {
		t.Fatalf("the call after the bad lines answered %s", l.Raw)
	}
	in.Close()
	if err := bridge.Wait(10 * time.Second); err != nil {
		t.Fatalf("warden stdio after its input ended: %v\n%s", err, bridge.Output())
	}
}
