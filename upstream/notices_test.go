package upstream

import (
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"
)

// A flood is reported once when it begins and once when it has calmed,
// with what was dropped; every drop is counted.
func TestNoticeGateReportsEpisodes(t *testing.T) {
	episodes := make(chan Flood, 4)
	var dropped atomic.Int64
	g := newNoticeGate("s", slog.New(slog.NewTextHandler(io.Discard, nil)), Options{
		NoticeDropped: func(server string) { dropped.Add(1) },
		Flood:         func(server string, f Flood) { episodes <- f },
	})
	passed := 0
	for range NoticeBurst + 50 {
		if g.allow() {
			passed++
		}
	}
	if passed < NoticeBurst || passed == NoticeBurst+50 {
		t.Fatalf("%d of %d passed; a burst of %d expected", passed, NoticeBurst+50, NoticeBurst)
	}
	if f := <-episodes; !f.Flooding {
		t.Fatalf("first report %+v, want the flood's beginning", f)
	}
	select {
	case f := <-episodes:
		if f.Flooding || f.Dropped != int64(NoticeBurst+50-passed) || f.Dropped != dropped.Load() {
			t.Fatalf("end of the flood reported as %+v; %d were dropped", f, dropped.Load())
		}
	case <-time.After(10 * noticeCalm):
		t.Fatal("the flood's end was not reported")
	}
}

// A limit of the options replaces the default one.
func TestNoticeGateLimit(t *testing.T) {
	g := newNoticeGate("s", slog.New(slog.NewTextHandler(io.Discard, nil)), Options{Notices: NoticeLimit{Rate: 1, Burst: 3}})
	passed := 0
	for range 10 {
		if g.allow() {
			passed++
		}
	}
	if passed != 3 {
		t.Fatalf("%d of 10 passed a limit of a burst of 3 at 1 a second", passed)
	}
}
