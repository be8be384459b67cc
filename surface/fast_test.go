package surface

import (
	"encoding/json"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/wardenmcp/warden/answer"
	"github.com/wardenmcp/warden/gateway"
)

type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *jsonrpc.Error  `json:"error"`
}

// A fast call's answer is the upstream's result as it came, as JSON with
// its length, or as one event whose data is one line even when the
// upstream's JSON had line breaks.
func TestFastAnswerPassesTheResultOn(t *testing.T) {
	raw := json.RawMessage("{\n  \"content\": [{\"type\": \"text\", \"text\": \"a\\nb\"}]\n}")
	b := replyTo(json.RawMessage(`7`), &answer.Result{Raw: raw}, nil)

	rec := httptest.NewRecorder()
	(&stream{w: rec}).finish(b)
	if rec.Header().Get("Content-Type") != "application/json" || rec.Header().Get("Content-Length") != strconv.Itoa(rec.Body.Len()) {
		t.Fatalf("headers %v for a body of %d bytes", rec.Header(), rec.Body.Len())
	}
	var r response
	if err := json.Unmarshal(rec.Body.Bytes(), &r); err != nil || r.JSONRPC != "2.0" || string(r.ID) != "7" || string(r.Result) != string(raw) {
		t.Fatalf("answer %s (%v)", rec.Body, err)
	}

	rec = httptest.NewRecorder()
	(&stream{w: rec, started: true}).finish(b) // the stream has begun
	lines := strings.Split(rec.Body.String(), "\n")
	if len(lines) != 4 || lines[0] != "event: message" || !strings.HasPrefix(lines[1], "data: ") || lines[2] != "" || lines[3] != "" {
		t.Fatalf("event stream %q", rec.Body)
	}
	r = response{}
	if err := json.Unmarshal([]byte(strings.TrimPrefix(lines[1], "data: ")), &r); err != nil || string(r.ID) != "7" {
		t.Fatalf("event data %q (%v)", lines[1], err)
	}
	var got, want any
	json.Unmarshal(r.Result, &got)
	json.Unmarshal(raw, &want)
	if !jsonEqual(got, want) {
		t.Fatalf("result %s, want %s", r.Result, raw)
	}
}

// A JSON-RPC error, also one wrapped (the gateway's unknown tool), goes out
// with its code.
func TestFastAnswerCarriesErrors(t *testing.T) {
	for _, e := range []error{
		&jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: `unknown tool "x" on server "s"`},
		&gateway.UnknownToolError{Server: "s", Tool: "x"},
	} {
		b := replyTo(json.RawMessage(`"a"`), nil, e)
		var r response
		if err := json.Unmarshal(b.bytes(), &r); err != nil || string(r.ID) != `"a"` || r.Error == nil || r.Error.Code != jsonrpc.CodeInvalidParams ||
			r.Error.Message != `unknown tool "x" on server "s"` || r.Result != nil {
			t.Fatalf("answer %s (%v)", b.bytes(), err)
		}
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
