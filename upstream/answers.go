package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"golang.org/x/sync/semaphore"
)

// Answers bounds the memory that tool answers hold while Warden relays
// them, over all servers: an answer larger than answerFree holds room in
// the bound from when it is read until it has been sent to the client (or
// the call ends); when the bound is full, the next large answer waits for
// room (within the call's timeout), and one answer larger than the
// per-answer maximum is refused.
//
// The room an answer takes is its length when the upstream says it
// beforehand (Content-Length, or a whole stdio message read), else the
// per-answer maximum until it has been read (then its length): an answer
// that held some room and then waited for more could wait for others that
// wait for it.
type Answers struct {
	sem   *semaphore.Weighted
	max   int64
	gauge func(delta int64)
}

const (
	// DefaultAnswersTotal and DefaultAnswerMax are the bounds Warden runs with.
	DefaultAnswersTotal = 256 << 20
	DefaultAnswerMax    = 64 << 20
	// answerFree is the size below which an answer takes no room: the
	// calls in flight per server bound those.
	answerFree = 1 << 20
)

// NewAnswers returns a bound of total bytes, at most max of them for one
// answer; gauge, if not nil, is told every change of the bytes held.
func NewAnswers(total, max int64, gauge func(delta int64)) *Answers {
	return &Answers{sem: semaphore.NewWeighted(total), max: min(max, total), gauge: gauge}
}

// AnswerTooLargeError is a tool answer larger than Warden relays.
type AnswerTooLargeError struct{ Max int64 }

func (e *AnswerTooLargeError) Error() string {
	return fmt.Sprintf("the tool's answer is larger than Warden passes on (%d MiB at most), so it was dropped; ask the tool for less at a time (a smaller page, range or limit)", e.Max>>20)
}

// answerHold is the room one call's answer holds in the bound.
type answerHold struct {
	a *Answers

	mu    sync.Mutex
	n     int64
	ended bool
	onEnd func()
}

func (a *Answers) hold() *answerHold { return &answerHold{a: a} }

// reserve takes n bytes of room, waiting until there is room or ctx ends.
// A hold that has ended takes none.
func (h *answerHold) reserve(ctx context.Context, n int64) error {
	if n > h.a.max {
		return &AnswerTooLargeError{Max: h.a.max}
	}
	h.mu.Lock()
	ended := h.ended
	h.mu.Unlock()
	if ended {
		return nil // no one waits for the answer
	}
	if err := h.a.sem.Acquire(ctx, n); err != nil {
		return err
	}
	h.mu.Lock()
	ended = h.ended
	if !ended {
		h.n += n
	}
	h.mu.Unlock()
	if ended {
		h.a.sem.Release(n)
		return nil
	}
	if h.a.gauge != nil {
		h.a.gauge(n)
	}
	return nil
}

func (h *answerHold) held() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n
}

// put gives back the room held, keeping the hold usable.
func (h *answerHold) put() {
	h.mu.Lock()
	n := h.n
	h.n = 0
	h.mu.Unlock()
	if n > 0 {
		h.a.give(n)
	}
}

// give releases n bytes of room, telling the gauge first: told after, it
// could count another's reserve of that room before the release, and show
// more than the bound held (TestAnswersWaitForRoom saw 6 MiB of 4).
func (a *Answers) give(n int64) {
	if a.gauge != nil {
		a.gauge(-n)
	}
	a.sem.Release(n)
}

// shrinkTo gives back the room held beyond n bytes (all of it for an
// answer that needs none).
func (h *answerHold) shrinkTo(n int64) {
	if n <= answerFree {
		n = 0
	}
	h.mu.Lock()
	extra := h.n - n
	if extra > 0 {
		h.n = n
	}
	h.mu.Unlock()
	if extra > 0 {
		h.a.give(extra)
	}
}

// end gives back the room held, for good: the answer has been sent.
func (h *answerHold) end() {
	h.mu.Lock()
	h.ended = true
	onEnd := h.onEnd
	h.mu.Unlock()
	h.put()
	if onEnd != nil {
		onEnd()
	}
}

// answerReader reads an answer's body for the direct HTTP path, taking room
// in the bound for what was read since the last event beyond answerFree.
type answerReader struct {
	r       io.Reader
	ctx     context.Context
	h       *answerHold
	size    int64 // the body's length, or -1 when unknown
	pending int64
}

func (r *answerReader) Read(p []byte) (int, error) {
	held := r.h.held()
	if held == 0 && (r.size > answerFree || r.pending+int64(len(p)) > answerFree) {
		want := r.h.a.max
		if r.size >= 0 {
			want = r.size
		}
		if err := r.h.reserve(r.ctx, want); err != nil {
			return 0, err
		}
		held = r.h.held()
	}
	if held > 0 {
		room := held - r.pending
		if room <= 0 {
			return 0, &AnswerTooLargeError{Max: r.h.a.max}
		}
		if int64(len(p)) > room {
			p = p[:room]
		}
	}
	n, err := r.r.Read(p)
	r.pending += int64(n)
	return n, err
}

// eventDone says an event that is not the answer was handled: its room is
// given back.
func (r *answerReader) eventDone() {
	r.pending = 0
	r.h.put()
}

// answerIDs ties a stdio connection's calls, by request id, to the holds of
// their answers.
type answerIDs struct {
	mu    sync.Mutex
	holds map[jsonrpc.ID]*answerHold
}

// sent notes a call request written with ctx.
func (a *answerIDs) sent(ctx context.Context, msg jsonrpc.Message) {
	call, ok := CallFrom(ctx)
	req, isReq := msg.(*jsonrpc.Request)
	if !ok || call.hold == nil || !isReq || !req.IsCall() {
		return
	}
	h := call.hold
	a.mu.Lock()
	a.holds[req.ID] = h
	a.mu.Unlock()
	h.mu.Lock()
	h.onEnd = func() {
		a.mu.Lock()
		delete(a.holds, req.ID)
		a.mu.Unlock()
	}
	h.mu.Unlock()
}

// received takes room for an answer read whole, waiting for it (the
// connection's reads wait meanwhile, which holds the server back), or
// turns a too large one into the error its call gets.
func (a *answerIDs) received(ctx context.Context, msg jsonrpc.Message) jsonrpc.Message {
	resp, ok := msg.(*jsonrpc.Response)
	if !ok {
		return msg
	}
	a.mu.Lock()
	h := a.holds[resp.ID]
	delete(a.holds, resp.ID)
	a.mu.Unlock()
	if h == nil || len(resp.Result) <= answerFree {
		return msg
	}
	var tooLarge *AnswerTooLargeError
	if err := h.reserve(ctx, int64(len(resp.Result))); errors.As(err, &tooLarge) {
		return &jsonrpc.Response{ID: resp.ID, Error: err}
	}
	return msg
}
