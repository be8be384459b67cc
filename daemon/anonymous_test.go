package daemon

import (
	"strings"
	"testing"

	"github.com/wardenmcp/warden/config"
)

// A config that knows no callers serves on loopback only, unless
// anonymous callers are allowed; one with "auth" or "clients" anywhere.
func TestAnonymous(t *testing.T) {
	none := &config.Config{Path: "/x/config.json"}
	clients := &config.Config{Clients: map[string]config.Client{"bot": {}}}
	auth := &config.Config{Auth: &config.Auth{}}
	for _, tc := range []struct {
		cfg   *config.Config
		addr  string
		allow bool
		anon  bool
		err   string
	}{
		{none, "127.0.0.1:7373", false, true, ""},
		{none, "[::1]:7373", false, true, ""},
		{none, "localhost:0", false, true, ""},
		{none, "0.0.0.0:7373", false, true, `listening on 0.0.0.0:7373, which is not loopback only, with neither "auth" nor "clients" in the config /x/config.json`},
		{none, ":7373", false, true, "which is not loopback only"},
		{none, "warden.example.com:7373", false, true, "which is not loopback only"},
		{none, "0.0.0.0:7373", true, true, ""},
		{clients, "0.0.0.0:7373", false, false, ""},
		{auth, "10.0.0.1:7373", false, false, ""},
	} {
		anon, err := anonymous(tc.cfg, tc.addr, tc.allow)
		if anon != tc.anon || (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s allow %t: %t %v", tc.addr, tc.allow, anon, err)
		}
		if err != nil && !strings.Contains(err.Error(), "--allow-anonymous") {
			t.Errorf("%s: the error does not say how to allow it: %v", tc.addr, err)
		}
	}
}
