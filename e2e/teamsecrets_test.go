package e2e

import (
	"encoding/hex"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"testing"
	"time"

	"github.com/wardenmcp/warden/api"
	"github.com/wardenmcp/warden/internal/testing/pgtest"
	"github.com/wardenmcp/warden/internal/testing/testenv"
	"github.com/wardenmcp/warden/internal/testing/wardentest"
)

// A backup of a team's database alone (pg_dump) reveals no secret: not the
// upstream's OAuth tokens after a login and a refresh, not a review page's
// login code or cookie.
func TestBackupRevealsNoSecret(t *testing.T) {
	pg := pgtest.Start(t, pgtest.Options{})
	as, _, cfgPath, stateDir := hostedSetup(t)
	wardentest.EditConfigFile(t, cfgPath, func(cfg map[string]any) {
		cfg["store"], cfg["storeKey"] = pg.URL(), "the backup test's store key"
	})
	w := wardentest.StartWith(t, cfgPath, stateDir)
	wardentest.WaitFor(t, 30*time.Second, "hosted needs_login", func() bool { return connState(w, "hosted") == "needs_login" })
	oauthLogin(t, testenv.BuildBinary(t, "./cmd/warden"), cfgPath, stateDir, "hosted")
	w.WaitReady(t, "hosted")
	cs := w.Connect(t, "/mcp/hosted", nil)
	expectEcho(t, cs)
	as.ExpireAccess()
	expectEcho(t, cs) // a refresh: the rotated tokens are stored too

	var login api.UILogin
	if code := w.API(t, "POST", "/v1/ui/login", nil, &login); code != http.StatusOK {
		t.Fatalf("POST /v1/ui/login: %d", code)
	}
	jar, _ := cookiejar.New(nil)
	resp, err := (&http.Client{Jar: jar}).Get(w.URL(login.Path))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cookies := jar.Cookies(resp.Request.URL)
	if resp.StatusCode != http.StatusOK || len(cookies) != 1 {
		t.Fatalf("the review page's login: %d, cookies %v", resp.StatusCode, cookies)
	}

	secrets := map[string]string{"the review page's cookie": cookies[0].Value, "the review page's login code": login.Code}
	for i, tok := range as.Issued() {
		secrets["OAuth token "+string(rune('A'+i))] = tok
	}
	if len(secrets) < 4 {
		t.Fatalf("too few secrets to look for: %v (login path %s)", secrets, login.Path)
	}
	dump := pg.Dump(t)
	if !strings.Contains(dump, "warden_kv") {
		t.Fatalf("the dump holds no store:\n%.2000s", dump)
	}
	// pg_dump writes bytea as hex: look for both forms.
	for what, v := range secrets {
		if strings.Contains(dump, v) || strings.Contains(dump, hex.EncodeToString([]byte(v))) {
			t.Errorf("%s is in the database's backup", what)
		}
	}
}
