package upstream

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// A server's notifications for clients (log messages, progress, resource
// updates) pass a token bucket: above NoticeRate a second, after a burst of
// NoticeBurst, they are dropped. A flooding server would otherwise outrun
// what Warden can hand on to clients, and the SDK queues what it has read
// and not yet handled without bound.
const (
	NoticeRate  = 200
	NoticeBurst = 1000
	// noticeReadRate is how fast a stdio server's notifications are read
	// at most: beyond it, its pipe fills and it waits, instead of Warden
	// spending its time reading what it drops.
	noticeReadRate = 5 * NoticeRate
	// noticeCalm is how long a flood must have stopped for its episode to
	// end (and be reported as ended, with the count dropped).
	noticeCalm = 2 * time.Second
)

// NoticeLimit is a server's rate of notifications for clients: Rate a
// second after a burst of Burst. The zero value is NoticeRate and
// NoticeBurst.
type NoticeLimit struct {
	Rate  float64
	Burst int
}

// orDefault is l, or the default limit when l is zero.
func (l NoticeLimit) orDefault() NoticeLimit {
	if l.Rate <= 0 || l.Burst <= 0 {
		return NoticeLimit{Rate: NoticeRate, Burst: NoticeBurst}
	}
	return l
}

// Flood is a flooding episode of a server, reported when it begins
// (Flooding) and when it ends (with what was dropped).
type Flood struct {
	Flooding bool  `json:"flooding"`
	Dropped  int64 `json:"dropped"`
}

// noticeGate throttles one connection's notifications.
type noticeGate struct {
	server  string
	log     *slog.Logger
	limit   *rate.Limiter
	reads   *rate.Limiter
	dropped func(server string)          // one notification dropped (for metrics)
	episode func(server string, f Flood) // an episode began or ended

	mu       sync.Mutex
	flooding bool
	count    int64 // dropped in this episode
	last     time.Time
}

func newNoticeGate(server string, log *slog.Logger, opts Options) *noticeGate {
	l := opts.Notices.orDefault()
	return &noticeGate{server: server, log: log, limit: rate.NewLimiter(rate.Limit(l.Rate), l.Burst), reads: rate.NewLimiter(noticeReadRate, NoticeBurst),
		dropped: opts.NoticeDropped, episode: opts.Flood}
}

// isNotice reports whether method is a notification throttled by the gate.
func isNotice(method string) bool {
	switch method {
	case "notifications/message", "notifications/progress", "notifications/resources/updated":
		return true
	}
	return false
}

// pace waits until another notification may be read (stdio).
func (g *noticeGate) pace(ctx context.Context) error { return g.reads.Wait(ctx) }

// allow reports whether a notification may pass, reporting floods.
func (g *noticeGate) allow() bool {
	if g.limit.Allow() {
		return true
	}
	g.mu.Lock()
	g.count++
	g.last = time.Now()
	begins := !g.flooding
	g.flooding = true
	g.mu.Unlock()
	if g.dropped != nil {
		g.dropped(g.server)
	}
	if begins {
		g.log.Warn("server floods notifications; dropping those above the limit until it calms down", "limit_per_second", g.limit.Limit())
		g.report(Flood{Flooding: true})
		time.AfterFunc(noticeCalm, g.calmed)
	}
	return false
}

// calmed ends the episode once nothing was dropped for noticeCalm.
func (g *noticeGate) calmed() {
	g.mu.Lock()
	if wait := noticeCalm - time.Since(g.last); wait > 0 {
		g.mu.Unlock()
		time.AfterFunc(wait, g.calmed)
		return
	}
	dropped := g.count
	g.flooding, g.count = false, 0
	g.mu.Unlock()
	g.log.Info("server stopped flooding notifications", "dropped", dropped)
	g.report(Flood{Dropped: dropped})
}

func (g *noticeGate) report(f Flood) {
	if g.episode != nil {
		g.episode(g.server, f)
	}
}
