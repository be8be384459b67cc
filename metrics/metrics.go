// Package metrics defines Warden's Prometheus metrics: calls by server, class
// and outcome, call latency, and each upstream's connection state.
package metrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics holds the collectors in their own registry. A nil *Metrics records
// nothing.
type Metrics struct {
	reg     *prometheus.Registry
	calls   *prometheus.CounterVec
	latency *prometheus.HistogramVec
	state   *prometheus.GaugeVec
	session *prometheus.CounterVec
	dropped *prometheus.CounterVec
	queued  prometheus.Gauge
	answers prometheus.Gauge
}

// States a connection can be in, one gauge series each.
var states = []string{"connecting", "ready", "backoff", "stopped"}

// InstanceLabel is the label naming the instance on every series when
// several share a store. (Not "instance": Prometheus sets that one to the
// scrape target's address.)
const InstanceLabel = "warden_instance"

// New registers the collectors; a non-empty instance labels every series
// with it (InstanceLabel), so that one dashboard tells the instances of a
// team's Warden apart.
func New(instance string) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "warden_tool_calls_total", Help: "Tool calls through Warden by server, write class and outcome (ok, error, refused, unknown).",
		}, []string{"server", "class", "outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "warden_tool_call_duration_seconds", Help: "Tool call latency through Warden, upstream time included.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10),
		}, []string{"server"}),
		state: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "warden_upstream_state", Help: "1 for the state each upstream connection is in.",
		}, []string{"server", "state"}),
		session: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "warden_upstream_sessions_total", Help: "Upstream HTTP session events: fresh, resumed, expired, reinitialized.",
		}, []string{"server", "event"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "warden_notifications_dropped_total", Help: "Upstream notifications dropped by server and reason: flood (above the server's rate) or slow_client (a client session's queue was full).",
		}, []string{"server", "reason"}),
		queued: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "warden_client_notifications_queued", Help: "Notifications queued toward client sessions, not yet sent.",
		}),
		answers: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "warden_answer_bytes_in_flight", Help: "Bytes of large tool answers Warden holds while relaying them (bounded).",
		}),
	}
	var reg prometheus.Registerer = m.reg
	if instance != "" {
		reg = prometheus.WrapRegistererWith(prometheus.Labels{InstanceLabel: instance}, reg)
	}
	reg.MustRegister(m.calls, m.latency, m.state, m.session, m.dropped, m.queued, m.answers, prometheus.NewGoCollector())
	return m
}

// ObserveCall counts one call.
func (m *Metrics) ObserveCall(server, class, outcome string, d time.Duration) {
	if m == nil {
		return
	}
	if class == "" {
		class = "unknown"
	}
	m.calls.WithLabelValues(server, class, outcome).Inc()
	m.latency.WithLabelValues(server).Observe(d.Seconds())
}

// SetState records a server's connection state.
func (m *Metrics) SetState(server, state string) {
	if m == nil {
		return
	}
	for _, s := range states {
		v := 0.0
		if s == state {
			v = 1
		}
		m.state.WithLabelValues(server, s).Set(v)
	}
}

// SessionEvent counts an upstream session event.
func (m *Metrics) SessionEvent(server, kind string) {
	if m == nil {
		return
	}
	m.session.WithLabelValues(server, kind).Inc()
}

// NoticeDropped counts a notification from server that was dropped: reason
// is "flood" or "slow_client".
func (m *Metrics) NoticeDropped(server, reason string) {
	if m == nil {
		return
	}
	m.dropped.WithLabelValues(server, reason).Inc()
}

// NoticesQueued adds n (negative: removes) to the notifications queued
// toward clients.
func (m *Metrics) NoticesQueued(n int) {
	if m == nil {
		return
	}
	m.queued.Add(float64(n))
}

// AnswerBytes adds n (negative: removes) to the answer bytes in flight.
func (m *Metrics) AnswerBytes(n int64) {
	if m == nil {
		return
	}
	m.answers.Add(float64(n))
}

// Forget drops a removed server's series.
func (m *Metrics) Forget(server string) {
	if m == nil {
		return
	}
	m.state.DeletePartialMatch(prometheus.Labels{"server": server})
	m.latency.DeletePartialMatch(prometheus.Labels{"server": server})
	m.dropped.DeletePartialMatch(prometheus.Labels{"server": server})
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}
