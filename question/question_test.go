package question

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Every method New knows is the method of the question it makes, and its
// answer is of the type NewAnswer names.
func TestTable(t *testing.T) {
	answers := map[string]mcp.InputResponse{
		"sampling/createMessage": &mcp.CreateMessageWithToolsResult{},
		"elicitation/create":     &mcp.ElicitResult{},
		"roots/list":             &mcp.ListRootsResult{},
	}
	for method, want := range answers {
		q := New(method)
		if q == nil || Method(q) != method {
			t.Errorf("New(%q) = %T, whose method is %q", method, q, Method(q))
			continue
		}
		if got := NewAnswer(q); jsonType(got) != jsonType(want) {
			t.Errorf("NewAnswer(%T) = %T, want %T", q, got, want)
		}
	}
	if New("tools/call") != nil || New("ping") != nil {
		t.Error("New made a question of a method that is not one")
	}
}

func jsonType(v any) string { b, _ := json.Marshal(v); return string(b) }

// A client that did not declare sampling or elicitation is refused with the
// protocol's error, which names what was missing; roots need no declaration.
func TestCapable(t *testing.T) {
	none := &mcp.ClientCapabilities{}
	for _, q := range []mcp.InputRequest{&mcp.CreateMessageWithToolsParams{}, &mcp.ElicitParams{}} {
		err := Capable(none, q)
		var je *jsonrpc.Error
		if !errors.As(err, &je) || je.Code != mcp.CodeMissingRequiredClientCapabilities {
			t.Fatalf("Capable(none, %T) = %v, want code %d", q, err, mcp.CodeMissingRequiredClientCapabilities)
		}
		var data mcp.MissingRequiredClientCapabilityData
		if json.Unmarshal(je.Data, &data) != nil || data.RequiredCapabilities == nil ||
			(data.RequiredCapabilities.Sampling == nil) == (data.RequiredCapabilities.Elicitation == nil) {
			t.Errorf("Capable(none, %T) data = %s, want the one capability it needs", q, je.Data)
		}
		if err := Capable(nil, q); err == nil {
			t.Errorf("Capable(nil, %T) let it through", q)
		}
	}
	all := &mcp.ClientCapabilities{Sampling: &mcp.SamplingCapabilities{}, Elicitation: &mcp.ElicitationCapabilities{}}
	for _, q := range []mcp.InputRequest{&mcp.CreateMessageWithToolsParams{}, &mcp.ElicitParams{}, &mcp.ListRootsParams{}} {
		if err := Capable(all, q); err != nil {
			t.Errorf("Capable(all, %T) = %v", q, err)
		}
	}
	if err := Capable(none, &mcp.ListRootsParams{}); err != nil {
		t.Errorf("roots refused: %v", err)
	}
}

// An answer decoded by its keys alone comes out as the type the question
// asked for.
func TestAnswerAs(t *testing.T) {
	var m mcp.InputResponseMap
	if err := json.Unmarshal([]byte(`{"a":{"role":"assistant","content":{"type":"text","text":"hi"},"model":"m"}}`), &m); err != nil {
		t.Fatal(err)
	}
	a, err := AnswerAs(&mcp.CreateMessageWithToolsParams{}, m["a"])
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := a.(*mcp.CreateMessageWithToolsResult); !ok || r.Model != "m" {
		t.Errorf("AnswerAs = %#v, want a CreateMessageWithToolsResult of model m", a)
	}
	e := &mcp.ElicitResult{Action: "accept"}
	if a, err := AnswerAs(&mcp.ElicitParams{}, e); err != nil || a != e {
		t.Errorf("an answer of the right type was not passed as it is: %v %v", a, err)
	}
}

// Prepare fills a question in as the SDK's server session does before
// sending it: the fast path sends what the SDK path would.
func TestPrepare(t *testing.T) {
	for _, c := range []struct {
		q    *mcp.ElicitParams
		mode string
	}{
		{&mcp.ElicitParams{Message: "m"}, "form"},
		{&mcp.ElicitParams{Message: "m", URL: "https://example.test/x", ElicitationID: "e"}, "url"},
		{&mcp.ElicitParams{Message: "m", Mode: "url"}, "url"},
	} {
		got := Prepare(c.q).(*mcp.ElicitParams)
		if got.Mode != c.mode || got.Message != "m" {
			t.Errorf("Prepare(%+v) = %+v, want mode %q", c.q, got, c.mode)
		}
	}
	q := &mcp.ElicitParams{Message: "m"}
	if Prepare(q); q.Mode != "" {
		t.Error("Prepare changed the question it was given")
	}
	s := Prepare(&mcp.CreateMessageWithToolsParams{MaxTokens: 5}).(*mcp.CreateMessageWithToolsParams)
	if b, _ := json.Marshal(s); s.MaxTokens != 5 || !strings.Contains(string(b), `"messages":[]`) {
		t.Errorf("Prepare(sampling without messages) = %s, want messages []", b)
	}
	if r := (&mcp.ListRootsParams{}); Prepare(r) != r {
		t.Error("Prepare changed a roots request")
	}
}

// Checked reads an accepted elicitation as the SDK's server session does:
// the form's defaults filled in, content the form does not allow refused;
// other answers pass as they are.
func TestChecked(t *testing.T) {
	form := &mcp.ElicitParams{Message: "m", RequestedSchema: map[string]any{"type": "object",
		"properties": map[string]any{"n": map[string]any{"type": "integer", "default": 7}}}}
	a, err := Checked(form, &mcp.ElicitResult{Action: "accept", Content: map[string]any{}})
	if err != nil || a.(*mcp.ElicitResult).Content["n"] != float64(7) {
		t.Errorf("accepted without content: %+v, %v; want n 7", a, err)
	}
	if _, err := Checked(form, &mcp.ElicitResult{Action: "accept", Content: map[string]any{"n": "seven"}}); err == nil ||
		!strings.Contains(err.Error(), "does not match requested schema") {
		t.Errorf("accepted with a string for n: %v; want refused", err)
	}
	declined := &mcp.ElicitResult{Action: "decline"}
	if a, err := Checked(form, declined); a != declined || err != nil {
		t.Errorf("declined: %+v, %v", a, err)
	}
	roots := &mcp.ListRootsResult{}
	if a, err := Checked(&mcp.ListRootsParams{}, roots); a != roots || err != nil {
		t.Errorf("roots: %+v, %v", a, err)
	}
}
