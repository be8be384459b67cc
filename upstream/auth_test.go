package upstream

import (
	"errors"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/wardenmcp/warden/config"
)

// loginAuth is an Authorizer whose servers all wait for a login.
type loginAuth struct{ changed chan struct{} }

func (loginAuth) Transport(_ *config.Server, next http.RoundTripper) http.RoundTripper { return next }
func (a loginAuth) NeedsLogin(string) (bool, <-chan struct{})                          { return true, a.changed }

// Only a server whose requests go through the Authorizer waits for a
// login: not a stdio one, nor one whose config sends its own
// Authorization header; a refusal names the server and is ErrAuthRequired.
func TestLoginOnlyThroughTheAuthorizer(t *testing.T) {
	auth := loginAuth{changed: make(chan struct{})}
	for _, c := range []struct {
		cfg  config.Server
		want bool
	}{
		{config.Server{Name: "web", Transport: config.TransportHTTP}, true},
		{config.Server{Name: "web", Transport: config.TransportHTTP, Headers: map[string]string{"authorization": "Bearer x"}}, false},
		{config.Server{Name: "local", Transport: config.TransportStdio}, false},
	} {
		var cfg atomic.Pointer[config.Server]
		cfg.Store(&c.cfg)
		l := login{name: c.cfg.Name, auth: auth, cfg: &cfg}
		need, changed := l.needed()
		if need != c.want || (changed != nil) != c.want {
			t.Errorf("%+v: needed() = %v, %v; want %v", c.cfg, need, changed, c.want)
		}
	}
	if l := (login{name: "web"}); !errors.Is(l.required(), ErrAuthRequired) || l.required().Error() == "" {
		t.Fatalf("required() = %v, want ErrAuthRequired naming the server", l.required())
	}
}
