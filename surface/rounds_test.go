package surface

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/answer"
	"github.com/wardenmcp/warden/gateway"
)

// A call asks twice across rounds and then answers; the states it hands
// out are good for one round of this call only.
func TestRounds(t *testing.T) {
	rs := newRounds()
	ctx := context.Background()
	ran := 0
	call := func(ctx context.Context, c gateway.Client) (any, error) {
		ran++
		first, err := askAs[mcp.ElicitResult](ctx, c, &mcp.ElicitParams{Message: "name?"})
		if err != nil {
			return nil, err
		}
		second, err := askAs[mcp.ListRootsResult](ctx, c, &mcp.ListRootsParams{})
		if err != nil {
			return nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: first.Content["name"].(string) + " " + second.Roots[0].URI}}}, nil
	}
	const bind = "mcp\x00tool\x00t"
	caps := &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}}

	_, open, state1, err := rs.run(ctx, &here{caps: caps}, bind, "", nil, &answer.After{}, call)
	if err != nil || len(open) != 1 {
		t.Fatalf("round 1: %v, %d questions", err, len(open))
	}
	var id1 string
	for id, q := range open {
		if _, ok := q.(*mcp.ElicitParams); !ok {
			t.Fatalf("round 1 asked %T, want elicitation", q)
		}
		id1 = id
	}

	refused := func(what, bind, state string, answers mcp.InputResponseMap) {
		t.Helper()
		if _, _, _, err := rs.run(ctx, &here{caps: caps}, bind, state, answers, &answer.After{}, call); err == nil || !strings.Contains(err.Error(), "requestState") && !strings.Contains(err.Error(), "inputResponses") {
			t.Errorf("%s: want a refusal, got %v", what, err)
		}
	}
	refused("a forged state", bind, "x.1."+strings.Repeat("A", 43), nil)
	refused("a tampered state", bind, state1[:len(state1)-2]+"AA", nil)
	refused("another tool's state", "mcp\x00tool\x00other", state1, nil)
	refused("an answer to no question", bind, state1, mcp.InputResponseMap{"nope": &mcp.ElicitResult{Action: "accept"}})

	_, open, state2, err := rs.run(ctx, &here{caps: caps}, bind, state1, mcp.InputResponseMap{id1: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}}, &answer.After{}, call)
	if err != nil || len(open) != 1 || state2 == state1 {
		t.Fatalf("round 2: %v, %d questions, new state %v", err, len(open), state2 != state1)
	}
	refused("the previous round's state", bind, state1, nil)
	var id2 string
	for id := range open {
		id2 = id
	}
	res, open, _, err := rs.run(ctx, &here{caps: caps}, bind, state2, mcp.InputResponseMap{id2: &mcp.ListRootsResult{Roots: []*mcp.Root{{URI: "file:///r"}}}}, &answer.After{}, call)
	if err != nil || open != nil {
		t.Fatalf("round 3: %v, %d questions", err, len(open))
	}
	if got := res.(*mcp.CallToolResult).Content[0].(*mcp.TextContent).Text; got != "Ada file:///r" || ran != 1 {
		t.Errorf("result %q after %d runs of the call, want %q after 1", got, ran, "Ada file:///r")
	}
	refused("a finished call's state", bind, state2, nil)
}

// A round that answers only some of the questions gets the others again;
// a call whose client does not come back within roundWait is abandoned.
func TestRoundsAskAgainWhatWasNotAnswered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rs := newRounds()
		ended := make(chan error, 1)
		call := func(ctx context.Context, c gateway.Client) (any, error) {
			_, err := c.Ask(ctx, "", &mcp.ListRootsParams{})
			ended <- err
			return &mcp.CallToolResult{}, err
		}
		ctx := context.Background()
		_, open, state, err := rs.run(ctx, &here{caps: nil}, "b", "", nil, &answer.After{}, call)
		if err != nil || len(open) != 1 {
			t.Fatalf("round 1: %v, %d questions", err, len(open))
		}
		_, again, state2, err := rs.run(ctx, &here{caps: nil}, "b", state, nil, &answer.After{}, call)
		if err != nil || len(again) != 1 || state2 == state {
			t.Fatalf("round 2 without answers: %v, %d questions; want the same question again with a new state", err, len(again))
		}
		for id := range open {
			if again[id] == nil {
				t.Errorf("round 2 asked %v, want %q again", again, id)
			}
		}

		time.Sleep(roundWait)
		synctest.Wait()
		select {
		case err := <-ended:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("the abandoned call's question ended with %v, want its context cancelled", err)
			}
		default:
			t.Fatalf("the call still waits for an answer %v after its last round", roundWait)
		}
		if _, _, _, err := rs.run(ctx, &here{caps: nil}, "b", state2, nil, &answer.After{}, call); err == nil {
			t.Error("the abandoned call's state was taken")
		}
	})
}

// askAs is c.Ask with its answer as the type q asks for.
func askAs[T any](ctx context.Context, c gateway.Client, q mcp.InputRequest) (*T, error) {
	a, err := c.Ask(ctx, "", q)
	if err != nil {
		return nil, err
	}
	return any(a).(*T), nil
}

// A question goes to the client under the upstream's own key for it, so
// that the client's answer can be matched to it; a key already open, or
// none (a 2025 request), gets one of Warden's.
func TestRoundsKeepTheUpstreamsKeys(t *testing.T) {
	rs := newRounds()
	call := func(ctx context.Context, c gateway.Client) (any, error) {
		errs := make(chan error, 3)
		for _, key := range []string{"user_name", "user_name", ""} {
			go func() { _, err := c.Ask(ctx, key, &mcp.ListRootsParams{}); errs <- err }()
		}
		for range 3 {
			if err := <-errs; err != nil {
				return nil, err
			}
		}
		return &mcp.CallToolResult{}, nil
	}
	ctx := context.Background()
	var open mcp.InputRequestMap
	state := ""
	for len(open) < 3 {
		_, more, next, err := rs.run(ctx, &here{caps: nil}, "b", state, nil, &answer.After{}, call)
		if err != nil {
			t.Fatal(err)
		}
		open, state = more, next
	}
	if open["user_name"] == nil {
		t.Errorf("asked %v, want the upstream's key user_name among them", slices.Collect(maps.Keys(open)))
	}
	for id := range open {
		if id != "user_name" && !strings.HasPrefix(id, "warden-") {
			t.Errorf("key %q is neither the upstream's nor Warden's", id)
		}
	}
	answers := mcp.InputResponseMap{}
	for id := range open {
		answers[id] = &mcp.ListRootsResult{}
	}
	if res, more, _, err := rs.run(ctx, &here{caps: nil}, "b", state, answers, &answer.After{}, call); err != nil || more != nil || res == nil {
		t.Errorf("after answering all three: %v, %d questions, %v", res, len(more), err)
	}
}

// here is the request of a round, as the gateway's client: it records the
// notifications sent on its stream.
type here struct {
	caps *mcp.ClientCapabilities

	mu       sync.Mutex
	progress []float64
}

func (h *here) Capabilities() *mcp.ClientCapabilities { return h.caps }

func (h *here) Ask(context.Context, string, mcp.InputRequest) (mcp.InputResponse, error) {
	return nil, errors.New("a round's request is not asked: its questions go in the result")
}

func (h *here) Progress(_ context.Context, p *mcp.ProgressNotificationParams) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.progress = append(h.progress, p.Progress)
}

func (h *here) Log(context.Context, *mcp.LoggingMessageParams) {}

// A call's progress goes on the stream of the round open when it is sent.
func TestRoundsProgressGoesOnTheOpenRound(t *testing.T) {
	rs := newRounds()
	call := func(ctx context.Context, c gateway.Client) (any, error) {
		c.Progress(ctx, &mcp.ProgressNotificationParams{Progress: 1})
		if _, err := c.Ask(ctx, "", &mcp.ListRootsParams{}); err != nil {
			return nil, err
		}
		c.Progress(ctx, &mcp.ProgressNotificationParams{Progress: 2})
		return &mcp.CallToolResult{}, nil
	}
	ctx := context.Background()
	first, second := &here{}, &here{}
	_, open, state, err := rs.run(ctx, first, "b", "", nil, &answer.After{}, call)
	if err != nil || len(open) != 1 {
		t.Fatalf("round 1: %v, %d questions", err, len(open))
	}
	answers := mcp.InputResponseMap{}
	for id := range open {
		answers[id] = &mcp.ListRootsResult{}
	}
	if _, _, _, err := rs.run(ctx, second, "b", state, answers, &answer.After{}, call); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(first.progress, []float64{1}) || !slices.Equal(second.progress, []float64{2}) {
		t.Errorf("progress on round 1: %v, on round 2: %v; want [1] and [2]", first.progress, second.progress)
	}
}

// A result says the type it is given, whatever it said before, and keeps
// the rest; an empty one too.
func TestWithResultType(t *testing.T) {
	var asked mcp.CallToolResult
	if err := json.Unmarshal([]byte(`{"content":[{"type":"text","text":"hi"}],"isError":true,"resultType":"input_required"}`), &asked); err != nil {
		t.Fatal(err)
	}
	got, err := withResultType(&asked, "complete")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(got)
	if got.NeedsInput() || !got.IsError || len(got.Content) != 1 || strings.Count(string(b), "resultType") != 1 || !strings.Contains(string(b), `"resultType":"complete"`) {
		t.Errorf("got %s", b)
	}
	empty, err := withResultType(&mcp.GetPromptResult{}, "input_required")
	if err != nil || !empty.NeedsInput() {
		t.Errorf("an empty result: %+v (%v)", empty, err)
	}
}

// A stateless-era client's result says its type and names the server in
// _meta: written into the upstream's JSON when it has neither, else by
// decoding it and encoding it again. Both ways give the same answer (but
// for what the SDK adds to a result without content: the upstream's JSON
// is otherwise passed on as it came, as to a 2025 client), and a _meta of
// the upstream's keeps what it holds (its own server info too).
func TestStatelessReply(t *testing.T) {
	v := newView(nil, "", slog.New(slog.DiscardHandler), "test")
	const info = `"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"warden","title":"Warden MCP gateway","version":"test"}},"resultType":"complete"`
	const named = `"io.modelcontextprotocol/serverInfo":{"name":"warden","title":"Warden MCP gateway","version":"test"}`
	cases := []struct {
		raw, want, wantRaw string
		spliced            bool // passed on in pieces, not decoded
	}{
		{`{"content":[{"type":"text","text":"hi"}]}`, `{"content":[{"type":"text","text":"hi"}],` + info + `}`, "", true},
		{"{\"isError\":true,\"content\":[] \n}", `{"isError":true,"content":[],` + info + `}`, "", true},
		{`{}`, `{"content":[],` + info + `}`, `{` + info + `}`, true},
		{"{ \n\t}", `{"content":[],` + info + `}`, `{` + info + `}`, true},
		{`{"_meta":{"a":1},"content":[]}`, `{"content":[],"_meta":{"a":1,` + named + `},"resultType":"complete"}`, "", true},
		{`{"_meta":{},"content":[],"resultType":"complete"}`, `{"content":[],` + info + `}`, "", true},
		{"{\"resultType\" : \"input_required\",\"_meta\":{ \"k\":[1] } ,\"content\":[]}", `{"content":[],"_meta":{"k":[1],` + named + `},"resultType":"complete"}`, "", true},
		{`{"content":[],"_meta":{ }}`, `{"content":[],` + info + `}`, "", true},
		{`{"content":[],"\u005fmeta":{"a":1}}`, `{"content":[],"_meta":{"a":1,` + named + `},"resultType":"complete"}`, "", true},
		{`{"content":[],"resultType":"input_required"}`, `{"content":[],` + info + `}`, "", true},
		{`{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up","version":"1"}},"content":[]}`, `{"content":[],"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up","version":"1"}},"resultType":"complete"}`, "", false},
		{`{"content":[],"ResultType":"input_required"}`, `{"content":[],` + info + `}`, "", false},
		{`{"content":[],"_meta":null}`, `{"content":[],` + info + `}`, "", false},
		{`{"content":[],"_meta":{"a":1},"_meta":{"b":2}}`, `{"content":[],"_meta":{"a":1,"b":2,` + named + `},"resultType":"complete"}`, "", false},
	}
	for _, c := range cases {
		var d mcp.CallToolResult
		if err := json.Unmarshal([]byte(c.raw), &d); err != nil {
			t.Fatalf("%s: %v", c.raw, err)
		}
		if _, spliced := v.statelessPieces([]byte(c.raw), "complete"); spliced != c.spliced {
			t.Errorf("%s: passed on in pieces %v, want %v", c.raw, spliced, c.spliced)
		}
		for _, res := range []*answer.Result{{Raw: json.RawMessage(c.raw)}, answer.Decoded(&d)} {
			r, err := v.statelessReply(json.RawMessage("7"), res, "complete")
			if err != nil {
				t.Fatalf("%s: %v", c.raw, err)
			}
			var got struct{ Result json.RawMessage }
			if err := json.Unmarshal(r.bytes(), &got); err != nil {
				t.Fatalf("%s: the reply %s: %v", c.raw, r.bytes(), err)
			}
			want := c.want
			if res.Raw != nil && c.wantRaw != "" {
				want = c.wantRaw
			}
			if canonical(t, got.Result) != canonical(t, []byte(want)) {
				t.Errorf("%s (raw %v): result %s, want %s", c.raw, res.Raw != nil, got.Result, want)
			}
		}
	}
}

// canonical is JSON with its objects' keys in order and no spaces.
func canonical(t *testing.T, b []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

// A call's context lasts until the answer of the request that took its
// result is on its way (the work the call leaves for then, the end of the
// upstream's stream, runs when it ends), and ends without that when the
// call is abandoned in the middle of a round.
func TestRoundEndsOnceSent(t *testing.T) {
	rs := newRounds()
	ctxs := make(chan context.Context, 1)
	quick := func(ctx context.Context, c gateway.Client) (any, error) {
		ctxs <- ctx
		return &mcp.CallToolResult{}, nil
	}
	sent := &answer.After{}
	if _, _, _, err := rs.run(context.Background(), &here{}, "b", "", nil, sent, quick); err != nil {
		t.Fatal(err)
	}
	callCtx := <-ctxs
	if callCtx.Err() != nil {
		t.Fatal("the call's context ended before its answer was sent")
	}
	sent.Run()
	if callCtx.Err() == nil {
		t.Fatal("the call's context outlived its answer")
	}

	slow := func(ctx context.Context, c gateway.Client) (any, error) {
		ctxs <- ctx
		<-ctx.Done()
		return nil, ctx.Err()
	}
	reqCtx, cancel := context.WithCancel(context.Background())
	go func() {
		callCtx = <-ctxs
		cancel() // the client goes away
	}()
	if _, _, _, err := rs.run(reqCtx, &here{}, "b", "", nil, &answer.After{}, slow); err == nil {
		t.Fatal("an abandoned call answered")
	}
	select {
	case <-callCtx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("an abandoned call's context never ended")
	}
}

// A call that ends while it waits for its client's next round (its upstream
// gave up on the question) has its context end then, not at the round's
// expiry: what it leaves for after its answer holds the upstream's
// connection. The client's next round gets its result, answers or not.
func TestRoundEndsWhileParked(t *testing.T) {
	rs := newRounds()
	ctxs := make(chan context.Context, 1)
	call := func(ctx context.Context, c gateway.Client) (any, error) {
		ctxs <- ctx
		asking, giveUp := context.WithTimeout(ctx, 50*time.Millisecond)
		defer giveUp()
		_, err := c.Ask(asking, "", &mcp.ListRootsParams{})
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "gave up: " + err.Error()}}}, nil
	}
	_, open, state, err := rs.run(context.Background(), &here{}, "b", "", nil, &answer.After{}, call)
	if err != nil || len(open) != 1 {
		t.Fatalf("round 1: %v, %d questions", err, len(open))
	}
	callCtx := <-ctxs
	select {
	case <-callCtx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("a call that ended while its round was kept still holds its context")
	}
	res, more, _, err := rs.run(context.Background(), &here{}, "b", state, nil, &answer.After{}, call)
	if err != nil || more != nil {
		t.Fatalf("round 2 of an ended call: %v, %d questions", err, len(more))
	}
	if got := res.(*mcp.CallToolResult).Content[0].(*mcp.TextContent).Text; !strings.HasPrefix(got, "gave up") {
		t.Errorf("round 2's result %q", got)
	}
}

// FuzzStatelessReply: whatever a result holds, a client reads the same
// answer whether it was passed on in pieces or decoded and encoded again.
func FuzzStatelessReply(f *testing.F) {
	v := newView(nil, "", slog.New(slog.DiscardHandler), "test")
	for _, seed := range []string{
		`{"content":[]}`, `{}`, `{"_meta":{"a":1},"content":[],"resultType":"x"}`, `{"content":[],"\u005fmeta":{ }}`,
		`{"resultType":"input_required","_meta":{"k":[1,{"_meta":2}]}}`, `{"_meta":{"a":1},"_META":{}}`,
	} {
		f.Add([]byte(seed))
	}
	read := func(t *testing.T, r reply) string {
		var got struct{ Result *mcp.CallToolResult }
		if err := json.Unmarshal(r.bytes(), &got); err != nil {
			t.Fatalf("the reply %s: %v", r.bytes(), err)
		}
		b, err := json.Marshal(got.Result)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var d mcp.CallToolResult
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 || raw[0] != '{' || !json.Valid(raw) || json.Unmarshal(raw, &d) != nil {
			t.Skip("not a tool result")
		}
		pieces, err := v.statelessReply(json.RawMessage("7"), &answer.Result{Raw: raw}, "complete")
		if err != nil {
			t.Fatal(err)
		}
		decoded, err := v.statelessReply(json.RawMessage("7"), answer.Decoded(&d), "complete")
		if err != nil {
			t.Fatal(err)
		}
		if p, dd := read(t, pieces), read(t, decoded); p != dd {
			t.Errorf("%s: in pieces %s\ndecoded %s", raw, p, dd)
		}
	})
}
