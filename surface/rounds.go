package surface

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/answer"
	"github.com/wardenmcp/warden/gateway"
	"github.com/wardenmcp/warden/question"
)

// Multi-round trips for stateless-era clients. A client of the 2026-07-28
// revision cannot be sent a request: when a call needs its input (an
// upstream of any era asks for elicitation, sampling or roots), the call
// answers "input required" with the questions and an opaque request state,
// and the client calls again with its answers and that state. Warden keeps
// the call itself running between the rounds: a 2025 upstream is waiting on
// its own request meanwhile, so the call cannot be re-run (for a write, that
// would do it twice). The state names the waiting call and is signed, so a
// client can neither forge nor swap one; a call whose client does not come
// back within roundWait is abandoned, as is one whose client goes away in
// the middle of a round.

// roundWait is how long a call waits for its client's next round.
const roundWait = 5 * time.Minute

// rounds are the calls waiting for their clients' answers.
type rounds struct {
	key []byte // signs request states; new per process

	mu      sync.Mutex
	waiting map[string]*round // by id
}

func newRounds() *rounds {
	return &rounds{key: []byte(rand.Text()), waiting: map[string]*round{}}
}

// round is one call of a stateless-era client, run across its rounds.
type round struct {
	id, bind string // bind: what the state is good for (endpoint and name)
	turn     int    // rounds so far: each state is good for one round only
	caps     *mcp.ClientCapabilities
	cancel   context.CancelFunc
	expiry   *time.Timer

	asks chan *ask     // questions from the call
	done chan struct{} // closed when the call returned
	res  any           // what the call returned: see rounded
	err  error

	mu      sync.Mutex
	open    map[string]*ask // asked, not yet answered
	here    gateway.Client  // the round's request, while one is open
	hereCtx context.Context // its context: what is sent with it goes on its stream
}

// ask is one question of a call to its client.
type ask struct {
	id     string // its key in the input-required result
	req    mcp.InputRequest
	answer chan mcp.InputResponse // buffered: one answer
}

// run serves one round of a call, a request of the client here: the first
// (state == "") starts fn, a later one hands over the client's answers. It
// returns the call's result, or the questions still open with the state to
// call again with. While it runs, the call's progress and log messages go
// on this request's stream. The call's context ends once the request that
// returns its result has run sent (when its answer is on its way), or when
// the call is abandoned.
func (rs *rounds) run(ctx context.Context, here gateway.Client, bind, state string, answers mcp.InputResponseMap, sent *answer.After,
	fn func(context.Context, gateway.Client) (any, error)) (res any, open mcp.InputRequestMap, next string, err error) {
	var r *round
	if state == "" {
		r = rs.start(ctx, here, bind, fn)
		answers = nil // answers to nothing asked yet: a new call has none
	} else if r, err = rs.take(bind, state); err != nil {
		return nil, nil, "", err
	} else {
		r.tell(ctx, here)
	}
	defer r.tell(nil, nil)
	if err := r.answer(answers); err != nil {
		rs.keep(r)
		return nil, nil, "", err
	}
	r.mu.Lock()
	unanswered := len(r.open) > 0 // the call waits on them: ask them again
	r.mu.Unlock()
	if unanswered {
		select {
		case <-r.done: // ended without them
			sent.Add(r.cancel)
			return r.res, nil, "", r.err
		default:
		}
	} else {
		select {
		case <-r.done:
			sent.Add(r.cancel)
			return r.res, nil, "", r.err
		case a := <-r.asks:
			r.add(a)
		case <-ctx.Done():
			// The client is gone in the middle of a round: as for any
			// call whose stream broke, the call is abandoned (a write's
			// outcome is then unknown).
			r.cancel()
			return nil, nil, "", ctx.Err()
		}
	}
	// Questions asked together go out together.
	for collecting := true; collecting; {
		select {
		case a := <-r.asks:
			r.add(a)
		case <-time.After(10 * time.Millisecond):
			collecting = false
		}
	}
	r.mu.Lock()
	open = make(mcp.InputRequestMap, len(r.open))
	for id, a := range r.open {
		open[id] = a.req
	}
	r.mu.Unlock()
	next = rs.sign(r)
	rs.keep(r)
	return nil, open, next, nil
}

// start begins a call of its own, outliving the request here that began it.
func (rs *rounds) start(hereCtx context.Context, here gateway.Client, bind string, fn func(context.Context, gateway.Client) (any, error)) *round {
	ctx, cancel := context.WithCancel(context.Background())
	r := &round{id: rand.Text(), bind: bind, caps: here.Capabilities(), cancel: cancel,
		asks: make(chan *ask), done: make(chan struct{}), open: map[string]*ask{},
		here: here, hereCtx: hereCtx}
	go func() {
		r.res, r.err = fn(ctx, roundClient{r})
		close(r.done)
		rs.mu.Lock()
		defer rs.mu.Unlock()
		if rs.waiting[r.id] == r {
			r.cancel() // see keep
		}
	}()
	return r
}

// keep puts r back to wait for its client's next round, for at most
// roundWait. A call that ends meanwhile keeps its result for that round,
// but what it leaves for after its answer (the upstream's connection and
// the answer's room among others) is done at once: no request is there to
// send the answer.
func (rs *rounds) keep(r *round) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.waiting[r.id] = r
	var expiry *time.Timer
	expiry = time.AfterFunc(roundWait, func() {
		rs.mu.Lock()
		defer rs.mu.Unlock()
		if rs.waiting[r.id] == r && r.expiry == expiry { // not taken since
			delete(rs.waiting, r.id)
			r.cancel()
		}
	})
	r.expiry = expiry
	select {
	case <-r.done:
		r.cancel()
	default:
	}
}

// take finds the call a request state names, for the round now starting.
func (rs *rounds) take(bind, state string) (*round, error) {
	id, turn, ok := rs.verify(bind, state)
	rs.mu.Lock()
	defer rs.mu.Unlock()
	r := rs.waiting[id]
	if !ok || r == nil || r.turn != turn {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: "requestState is not one Warden gave for this call, or its call has ended (it waits " + roundWait.String() + " for the next round): call again without requestState"}
	}
	delete(rs.waiting, id)
	r.expiry.Stop()
	return r, nil
}

// sign makes r's request state for its next round: its id and turn, and
// a MAC over them and what the state is good for.
func (rs *rounds) sign(r *round) string {
	r.turn++
	id := r.id + "." + strconv.Itoa(r.turn)
	return id + "." + rs.mac(id, r.bind)
}

// verify reads a state back: the round's id, if the state is one Warden
// signed for bind, and the turn it is for.
func (rs *rounds) verify(bind, state string) (id string, turn int, ok bool) {
	i := strings.LastIndexByte(state, '.')
	if i < 0 {
		return "", 0, false
	}
	signed, mac := state[:i], state[i+1:]
	id, t, _ := strings.Cut(signed, ".")
	turn, err := strconv.Atoi(t)
	return id, turn, err == nil && hmac.Equal([]byte(mac), []byte(rs.mac(signed, bind)))
}

func (rs *rounds) mac(signed, bind string) string {
	h := hmac.New(sha256.New, rs.key)
	h.Write([]byte(signed + "\x00" + bind))
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

// tell makes the request of the round now open the one the call's
// notifications go to; nil, none.
func (r *round) tell(ctx context.Context, here gateway.Client) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.here, r.hereCtx = here, ctx
}

// told is what tell set.
func (r *round) told() (context.Context, gateway.Client) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.hereCtx, r.here
}

// add opens a question under the upstream's own key for it, or a key of
// Warden's when it has none (a 2025 request) or that key is in use.
func (r *round) add(a *ask) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, taken := r.open[a.id]; taken || a.id == "" {
		a.id = "warden-" + rand.Text()[:10]
	}
	r.open[a.id] = a
}

// answer hands the client's answers to the questions they answer.
func (r *round) answer(answers mcp.InputResponseMap) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for id := range answers {
		if r.open[id] == nil {
			return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("inputResponses answers %q, which was not asked or was answered already", id)}
		}
	}
	for id, resp := range answers {
		r.open[id].answer <- resp
		delete(r.open, id)
	}
	return nil
}

// roundClient is the calling client as the gateway sees it: its questions
// become the input required by the next round; notifications go on the
// stream of the round open, and between rounds, with none, are dropped.
type roundClient struct{ r *round }

func (c roundClient) Capabilities() *mcp.ClientCapabilities { return c.r.caps }

func (c roundClient) Ask(ctx context.Context, key string, q mcp.InputRequest) (mcp.InputResponse, error) {
	a := &ask{id: key, req: q, answer: make(chan mcp.InputResponse, 1)}
	select {
	case c.r.asks <- a:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case resp := <-a.answer:
		return question.AnswerAs(q, resp)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c roundClient) Progress(_ context.Context, p *mcp.ProgressNotificationParams) {
	if ctx, here := c.r.told(); here != nil {
		here.Progress(ctx, p)
	}
}

func (c roundClient) Log(_ context.Context, p *mcp.LoggingMessageParams) {
	if ctx, here := c.r.told(); here != nil {
		here.Log(ctx, p)
	}
}

// inRounds serves a request whose upstream may ask its client for input
// (tools/call, prompts/get, resources/read), with fn doing it for the
// client, and says its result type to a stateless-era client (see
// rounded).
func inRounds[R any, P interface {
	*R
	mcp.Result
}](ctx context.Context, v *view, here gateway.Client, stateless bool, bind string, state *string, answers *mcp.InputResponseMap,
	fn func(ctx context.Context, c gateway.Client) (P, error), pending func(mcp.InputRequestMap, string) P) (P, error) {
	sent := &answer.After{}
	defer sent.Run() // before the SDK sends the result: these calls leave nothing for after it
	res, typ, err := rounded(ctx, v, here, stateless, bind, state, answers, sent, fn, pending)
	if err != nil || typ == "" {
		return res, err
	}
	return withResultType(res, typ)
}

// rounded runs fn, which serves a request for its client here, and returns
// its result and the result type a stateless-era client is to be told
// ("" for a 2025 client). A 2025 session's client is asked on its own
// request's stream; a stateless-era one's over rounds, the request naming
// its round by its request state and answering with its input responses.
// state and answers point into the params fn sends upstream: they are read,
// then left as the upstream is to see them (the state is Warden's, not the
// upstream's, and so are the answers of a later round; a new request's
// answers, given before anything was asked, are the upstream's to read).
// bind says what a state is good for; pending makes the input-required
// result; sent runs once the request's answer is on its way (see
// rounds.run).
func rounded[T any](ctx context.Context, v *view, here gateway.Client, stateless bool, bind string, state *string, answers *mcp.InputResponseMap,
	sent *answer.After, fn func(ctx context.Context, c gateway.Client) (T, error), pending func(mcp.InputRequestMap, string) T) (res T, typ string, err error) {
	roundState, roundAnswers := *state, *answers
	if roundState != "" {
		*answers = nil
	}
	*state = ""
	if !stateless {
		res, err = fn(ctx, here)
		return res, "", err
	}
	done, open, next, err := v.rounds.run(ctx, here, v.surface+"\x00"+bind, roundState, roundAnswers, sent,
		func(ctx context.Context, c gateway.Client) (any, error) { return fn(ctx, c) })
	switch {
	case err != nil:
		return res, "", err
	case open != nil:
		return pending(open, next), "input_required", nil
	}
	return done.(T), "complete", nil
}

// sessionClient is the client of a request on ss, and whether ss is of
// the stateless era.
func sessionClient(ss *mcp.ServerSession) (gateway.Client, bool) {
	return gateway.SessionClient{ServerSession: ss}, isStateless(ss)
}

// callRounds runs a stateless-era client's tools/call over its rounds, for
// the request's client here (the SDK server's path and the fast path). It
// returns the result as the gateway gave it, and its result type; the work
// the call leaves for after its answer is done once sent has run.
func (v *view) callRounds(ctx context.Context, here gateway.Client, params *mcp.CallToolParamsRaw, sent *answer.After, from origin) (*answer.Result, string, error) {
	p := *params
	return rounded(ctx, v, here, true, "tool\x00"+p.Name, &p.RequestState, &p.InputResponses, sent,
		func(ctx context.Context, c gateway.Client) (*answer.Result, error) {
			after := &answer.After{}
			res, err := v.call(ctx, &p, c, after, from)
			context.AfterFunc(ctx, after.Run) // all of it added by now
			return res, err
		},
		func(open mcp.InputRequestMap, next string) *answer.Result {
			return answer.Decoded(&mcp.CallToolResult{InputRequests: open, RequestState: next})
		})
}

// withResultType is res saying its result type, which a stateless-era
// client requires. The SDK sets it only on results of the handlers it
// calls itself, and tools/call is Warden's (see intercept); the field is
// the SDK's own, set from JSON: it is written last into res encoded (a
// key the result already has is overridden, as the last of duplicate keys
// is what a decoder keeps), and read back.
func withResultType[R any, P interface {
	*R
	mcp.Result
}](res P, t string) (P, error) {
	b, err := json.Marshal(res)
	if err != nil {
		return nil, err
	}
	end := bytes.LastIndexByte(b, '}')
	if end < 0 {
		return nil, fmt.Errorf("%T encodes as %.40s, not an object", res, b)
	}
	sep := ","
	if b[end-1] == '{' { // json.Marshal writes no spaces
		sep = ""
	}
	b = append(b[:end:end], sep+`"resultType":"`+t+`"}`...)
	out := P(new(R))
	return out, json.Unmarshal(b, out)
}
