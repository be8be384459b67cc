package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/wardenmcp/warden/instances"
	"github.com/wardenmcp/warden/internal/testing/pgtest"
	"github.com/wardenmcp/warden/store"
)

// The keys the store commands' tests seal under, first and after rotating.
const oldKey, newKey = "the team's first key, long enough", "the team's second key, long enough"

// storeSetup makes a state dir whose embedded store holds what fill puts,
// and names a config file beside it; writeConfig writes the file with a
// store URL and storeKey.
func storeSetup(t *testing.T, fill func(store.Tx) error) (stateDir, cfgPath string, writeConfig func(url, key string)) {
	t.Helper()
	dir := t.TempDir()
	stateDir, cfgPath = filepath.Join(dir, "state"), filepath.Join(dir, "config.json")
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		t.Fatal(err)
	}
	emb, err := store.Open(context.Background(), store.Options{Path: filepath.Join(stateDir, "warden.db")})
	if err != nil {
		t.Fatal(err)
	}
	err = emb.Update(context.Background(), fill)
	emb.Close()
	if err != nil {
		t.Fatal(err)
	}
	return stateDir, cfgPath, func(url, key string) {
		cfg := fmt.Sprintf(`{"store": %q, "storeKey": %q, "mcpServers": {}}`, url, key)
		if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// warden store migrate copies the embedded store into PostgreSQL, sealing
// its secrets, and checks the copy; a second run writes nothing. warden
// store rotate-key then seals them under a new key.
func TestStoreMigrateAndRotateKey(t *testing.T) {
	ctx := context.Background()
	stateDir, cfgPath, writeConfig := storeSetup(t, func(tx store.Tx) error {
		if err := tx.Put("tools/github", []byte("create_issue"), []byte(`{"status":"approved"}`)); err != nil {
			return err
		}
		return tx.PutSecret("oauth", []byte("github"), []byte("gho_token"))
	})
	url := pgtest.Start(t, pgtest.Options{}).URL()
	writeConfig("", oldKey)

	code, out, errOut := runCLI(t, "", "--config", cfgPath, "--state-dir", stateDir, "store", "migrate", "--to", url)
	if code != 0 || !strings.Contains(out, "copied 2 records") || !strings.Contains(out, "the copy matches") {
		t.Fatalf("migrate: %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = runCLI(t, "", "--config", cfgPath, "--state-dir", stateDir, "store", "migrate", "--to", url)
	if code != 0 || !strings.Contains(out, "copied 0 records") {
		t.Fatalf("migrate again: %d\n%s%s; want nothing copied", code, out, errOut)
	}

	open := func(key string) store.Store {
		st, err := store.Open(ctx, store.Options{URL: url, Key: key})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	secret := func(st store.Store) (raw, opened string, err error) {
		err = st.View(ctx, func(tx store.Tx) error {
			r, _ := tx.Get("oauth", []byte("github"))
			raw = string(r)
			v, err := tx.GetSecret("oauth", []byte("github"))
			opened = string(v)
			return err
		})
		return raw, opened, err
	}
	st := open(oldKey)
	if raw, opened, err := secret(st); err != nil || opened != "gho_token" || strings.Contains(raw, "gho_token") {
		t.Fatalf("the token in PostgreSQL: raw %q, opened %q, %v; want it sealed", raw, opened, err)
	}
	st.Close()

	writeConfig(url, newKey)
	t.Setenv("OLD_WARDEN_KEY", oldKey)
	code, out, errOut = runCLI(t, "", "--config", cfgPath, "--state-dir", stateDir, "store", "rotate-key", "--old-key-env", "OLD_WARDEN_KEY")
	if code != 0 || !strings.Contains(out, "sealed 1 secrets again") {
		t.Fatalf("rotate-key: %d\n%s%s", code, out, errOut)
	}
	if _, opened, err := secret(open(newKey)); err != nil || opened != "gho_token" {
		t.Fatalf("under the new key: %q, %v", opened, err)
	}
	if _, _, err := secret(open(oldKey)); err == nil {
		t.Fatal("the old key still opens the token after rotate-key")
	}
}

// Wrong use names what to give.
func TestStoreCommandsSayWhatIsMissing(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfgPath, []byte(`{"mcpServers": {}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"store", "migrate"}, 2, "--to postgres://"},
		{[]string{"store", "migrate", "--to", "postgres://u:hunter2@127.0.0.1:1/db"}, 1, "sets no storeKey"},
		{[]string{"store", "rotate-key"}, 2, "--old-key-env"},
	} {
		code, out, errOut := runCLI(t, "", append([]string{"--config", cfgPath, "--state-dir", filepath.Join(dir, "s")}, c.args...)...)
		if code != c.code || !strings.Contains(errOut, c.want) || strings.Contains(out+errOut, "hunter2") {
			t.Errorf("%v: %d %q %q; want %d naming %q", c.args, code, out, errOut, c.code, c.want)
		}
	}
}

// An upstream token an earlier version kept in plaintext (before tokens
// were marked as secrets) is sealed on its way into PostgreSQL, not copied
// as it is.
func TestStoreMigrateSealsEarlierTokens(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	stateDir, cfgPath := filepath.Join(dir, "state"), filepath.Join(dir, "config.json")
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		t.Fatal(err)
	}
	const key = "the team's first key, long enough"
	if err := os.WriteFile(cfgPath, []byte(fmt.Sprintf(`{"storeKey": %q, "mcpServers": {}}`, key)), 0o600); err != nil {
		t.Fatal(err)
	}
	emb, err := store.Open(ctx, store.Options{Path: filepath.Join(stateDir, "warden.db")})
	if err != nil {
		t.Fatal(err)
	}
	err = emb.Update(ctx, func(tx store.Tx) error { // as an earlier version wrote it
		return tx.Put("upstream_auth", []byte("github"), []byte(`{"server":"github","token":{"access_token":"gho_earlier"}}`))
	})
	emb.Close()
	if err != nil {
		t.Fatal(err)
	}
	url := pgtest.Start(t, pgtest.Options{}).URL()
	if code, out, errOut := runCLI(t, "", "--config", cfgPath, "--state-dir", stateDir, "store", "migrate", "--to", url); code != 0 {
		t.Fatalf("migrate: %d\n%s%s", code, out, errOut)
	}
	st, err := store.Open(ctx, store.Options{URL: url, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var raw, opened []byte
	err = st.View(ctx, func(tx store.Tx) error {
		r, err := tx.Get("upstream_auth", []byte("github"))
		raw = bytes.Clone(r)
		if err == nil {
			opened, err = tx.GetSecret("upstream_auth", []byte("github"))
		}
		return err
	})
	if err != nil || !store.Sealed(raw) || !bytes.Contains(opened, []byte("gho_earlier")) {
		t.Fatalf("the earlier token in PostgreSQL: raw %q, opened %q, %v; want it sealed", raw, opened, err)
	}
}

// startInstance runs what warden serve runs of an instance on the store at
// url: the store opened under its name, which holds its liveness lock, and
// its record. stop stops it cleanly; kill ends it as kill -9 would, leaving
// its record behind.
func startInstance(t *testing.T, url, key, name string) (stop, kill func()) {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{URL: url, Key: key, Instance: name})
	if err != nil {
		t.Fatal(err)
	}
	h, err := instances.Start(ctx, st, instances.Instance{ID: name, Listen: "127.0.0.1:7401"})
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	var once sync.Once
	stop = func() { once.Do(func() { h.Stop(ctx); st.Close() }) }
	kill = func() { once.Do(func() { st.Close(); h.Stop(ctx) }) } // the store gone, Stop cannot remove the record
	t.Cleanup(stop)
	return stop, kill
}

// warden store migrate and rotate-key are refused while instances run on
// the database, naming them and what to do; an instance that died (its
// record left behind) does not hold them back; once the live one stops,
// both run.
func TestStoreCommandsRefusedWhileInstancesRun(t *testing.T) {
	stateDir, cfgPath, writeConfig := storeSetup(t, func(tx store.Tx) error {
		return tx.PutSecret("oauth", []byte("github"), []byte("gho_token"))
	})
	url := pgtest.Start(t, pgtest.Options{}).URL()
	stopLive, _ := startInstance(t, url, oldKey, "team-live")
	_, kill := startInstance(t, url, oldKey, "team-died")
	kill()

	writeConfig("", oldKey)
	t.Setenv("OLD_WARDEN_KEY", oldKey)
	migrate := []string{"--config", cfgPath, "--state-dir", stateDir, "store", "migrate", "--to", url}
	rotate := []string{"--config", cfgPath, "--state-dir", stateDir, "store", "rotate-key", "--old-key-env", "OLD_WARDEN_KEY"}
	code, out, errOut := runCLI(t, "", migrate...)
	if code != 1 || !strings.Contains(errOut, "team-live (http://127.0.0.1:7401)") || strings.Contains(errOut, "team-died") ||
		!strings.Contains(errOut, "stop them") || !strings.Contains(errOut, "then run warden store migrate --to "+url+" again") {
		t.Fatalf("migrate beside a live instance: %d\n%s%s; want refused, naming it alone and what to do", code, out, errOut)
	}
	writeConfig(url, newKey)
	code, out, errOut = runCLI(t, "", rotate...)
	if code != 1 || !strings.Contains(errOut, "team-live") || strings.Contains(errOut, "team-died") ||
		!strings.Contains(errOut, "then run warden store rotate-key --old-key-env OLD_WARDEN_KEY again") {
		t.Fatalf("rotate-key beside a live instance: %d\n%s%s; want refused, naming it alone and what to do", code, out, errOut)
	}

	stopLive()
	writeConfig("", oldKey)
	if code, out, errOut = runCLI(t, "", migrate...); code != 0 || !strings.Contains(out, "copied 1 records") {
		t.Fatalf("migrate once the instance stopped: %d\n%s%s", code, out, errOut)
	}
	writeConfig(url, newKey)
	if code, out, errOut = runCLI(t, "", rotate...); code != 0 || !strings.Contains(out, "sealed 1 secrets again") {
		t.Fatalf("rotate-key once the instance stopped: %d\n%s%s", code, out, errOut)
	}
}
