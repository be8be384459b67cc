package upstream

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"testing"
)

// gaugeRecorder follows the bytes an Answers holds, and their peak.
type gaugeRecorder struct {
	mu        sync.Mutex
	now, peak int64
}

func (g *gaugeRecorder) add(d int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.now += d
	g.peak = max(g.peak, g.now)
}

// Large answers of unknown length wait for room: no more than the bound is
// ever held, and every one gets through once others are sent.
func TestAnswersWaitForRoom(t *testing.T) {
	const total, most = 4 << 20, 2 << 20
	var g gaugeRecorder
	a := NewAnswers(total, most, g.add)
	body := bytes.Repeat([]byte("x"), 3*answerFree/2)

	sent := make(chan struct{})
	var read atomic.Int32
	readOne := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			h := a.hold()
			defer h.end()
			r := &answerReader{r: bytes.NewReader(body), ctx: context.Background(), h: h, size: -1}
			b, err := io.ReadAll(r)
			if err != nil || len(b) != len(body) {
				t.Errorf("read %d bytes (%v)", len(b), err)
			}
			read.Add(1)
			readOne <- struct{}{}
			<-sent // held until the answer is sent
		})
	}
	// Two answers fit (each takes the per-answer maximum); the others
	// wait until those are sent.
	<-readOne
	<-readOne
	close(sent)
	wg.Wait()
	if g.peak > total || g.now != 0 {
		t.Fatalf("held at most %d bytes (bound %d), %d at the end", g.peak, total, g.now)
	}
	if read.Load() != 8 {
		t.Fatalf("%d answers read", read.Load())
	}
}

// Once read whole, an answer of unknown length keeps only its own size.
func TestAnswerShrinksOnceRead(t *testing.T) {
	a := NewAnswers(4<<20, 2<<20, nil)
	h := a.hold()
	defer h.end()
	if err := h.reserve(context.Background(), 2<<20); err != nil {
		t.Fatal(err)
	}
	h.shrinkTo(3 * answerFree / 2)
	if h.held() != 3*answerFree/2 || !a.sem.TryAcquire(4<<20-3*answerFree/2) {
		t.Fatalf("%d bytes held after the answer was read", h.held())
	}
}

// An answer larger than the per-answer maximum is refused: at once when its
// length is known, else when it passes the maximum.
func TestAnswerTooLarge(t *testing.T) {
	a := NewAnswers(8<<20, 2<<20, nil)
	body := bytes.Repeat([]byte("x"), 3<<20)
	for _, size := range []int64{-1, int64(len(body))} {
		h := a.hold()
		src := bytes.NewReader(body)
		_, err := io.ReadAll(&answerReader{r: src, ctx: context.Background(), h: h, size: size})
		var tooLarge *AnswerTooLargeError
		if !errors.As(err, &tooLarge) {
			t.Fatalf("size %d: %v, want AnswerTooLargeError", size, err)
		}
		if read := int64(len(body)) - int64(src.Len()); size >= 0 && read != 0 || read > 2<<20 {
			t.Fatalf("size %d: %d bytes read before the refusal", size, read)
		}
		h.end()
	}
	// A JSON answer that claims to be huge is refused before anything is
	// set aside for it.
	h := a.hold()
	if _, err := readAnswer(&answerReader{r: bytes.NewReader(body), ctx: context.Background(), h: h, size: 1 << 40}); !errors.As(err, new(*AnswerTooLargeError)) {
		t.Fatalf("an answer of 1 TiB by its Content-Length: %v", err)
	}
	h.end()
	// All room is back: the whole bound can be taken.
	if !a.sem.TryAcquire(8 << 20) {
		t.Fatal("room was not given back")
	}
}

// Events before the answer give their room back: a long stream of large
// notifications is not an answer too large.
func TestAnswerEventsGiveRoomBack(t *testing.T) {
	a := NewAnswers(4<<20, 2<<20, nil)
	h := a.hold()
	defer h.end()
	r := &answerReader{r: bytes.NewReader(bytes.Repeat([]byte("x"), 10<<20)), ctx: context.Background(), h: h, size: -1}
	buf := make([]byte, 64<<10)
	for i := 0; ; i++ {
		n, err := r.Read(buf)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("after %d reads: %v", i, err)
		}
		if i%24 == 23 && n > 0 {
			r.eventDone() // every 1.5 MiB, an event that is not the answer
		}
	}
	r.eventDone()
	if h.held() != 0 {
		t.Fatalf("%d bytes still held after the last event", h.held())
	}
}
