package surface

import (
	"log/slog"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/callers"
	"github.com/wardenmcp/warden/config"
	"github.com/wardenmcp/warden/writes"
)

// A call's origin carries who its token named, with what the policy gives
// them, into the gateway's call and a latch's record; without a policy,
// no one in particular, unlimited; with one but no caller found, nothing.
func TestOriginCarriesTheCaller(t *testing.T) {
	v := newView(nil, "", slog.New(slog.DiscardHandler), "test")
	v.policy = &atomic.Pointer[callers.Policy]{}
	h := http.Header{}
	meta := mcp.Meta{mcp.MetaKeyClientInfo: map[string]any{"name": "agent-x", "version": "2"}}
	if o := v.originOf(h, nil, meta); o.who.Profile != nil || o.caller.User != "" || o.caller.Name != "agent-x" {
		t.Errorf("without a policy: %+v", o)
	}
	cfg, err := config.Parse("", []byte(`{"clients": {"dev": {"tokenSha256": "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", "profile": "p"}},
		"profiles": {"p": {"servers": {"fx": {}}}}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	v.policy.Store(callers.New(cfg))
	if o := v.originOf(h, nil, meta); o.who.Profile == nil || o.who.Profile.Allows("fx", "t", writes.ClassRead) {
		t.Errorf("a policy but no caller: %+v", o.who)
	}
	h.Set(callerHeader, `{"Client":"dev"}`)
	o := v.originOf(h, nil, meta)
	if o.caller.User != "dev" || o.caller.Name != "agent-x" || o.who.Client != "dev" || !o.who.Profile.Allows("fx", "t", writes.ClassWrite) || o.who.Profile.Allows("gh", "t", writes.ClassRead) {
		t.Errorf("dev: %+v %+v", o.caller, o.who)
	}
}
