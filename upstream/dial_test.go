package upstream

import (
	"sync/atomic"
	"testing"

	"github.com/wardenmcp/warden/config"
	"github.com/wardenmcp/warden/protocol"
	"github.com/wardenmcp/warden/sessions"
)

// storedSession is a SessionStore holding one session of version.
type storedSession struct{ version string }

func (s storedSession) Load(string, string) (sessions.Record, bool) {
	return sessions.Record{ProtocolVersion: s.version}, s.version != ""
}
func (storedSession) Save(sessions.Record, string) error { return nil }
func (storedSession) MarkResumed(string)                 {}
func (storedSession) Delete(string) error                { return nil }

// The revision asked for: for stdio and SSE the newest with sessions;
// for HTTP the one spoken last, else a stored session's, else the newest.
func TestDialerAsksForRevision(t *testing.T) {
	for _, c := range []struct {
		transport, spoke, stored, want string
	}{
		{config.TransportStdio, "", "", sessionProtocol},
		{"sse", "", "", sessionProtocol},
		{config.TransportHTTP, "", "", protocol.Newest},
		{config.TransportHTTP, "", "2025-06-18", "2025-06-18"},
		{config.TransportHTTP, "2025-03-26", "2025-06-18", "2025-03-26"},
	} {
		var cfg atomic.Pointer[config.Server]
		cfg.Store(&config.Server{Name: "s", Transport: c.transport})
		d := &dialer{name: "s", cfg: &cfg, opts: Options{Sessions: storedSession{c.stored}}, spoke: c.spoke}
		if got := d.protocol(); got != c.want {
			t.Errorf("%+v: asked for %q, want %q", c, got, c.want)
		}
	}
}
