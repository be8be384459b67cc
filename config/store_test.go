package config

import (
	"strings"
	"testing"
)

// "store" and "storeKey" expand ${env:} references; a store that is not a
// postgres:// URL is refused without quoting it (it may hold a password).
func TestStoreFields(t *testing.T) {
	env := func(name string) (string, bool) {
		v, ok := map[string]string{"PGPASS": "s3cret", "KEY": "k3y"}[name]
		return v, ok
	}
	cfg, err := Parse("w.json", []byte(`{"store": "postgres://warden:${env:PGPASS}@db/warden", "storeKey": "${env:KEY}"}`), env)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Store != "postgres://warden:s3cret@db/warden" || cfg.StoreKey != "k3y" {
		t.Fatalf("store %q, key %q", cfg.Store, cfg.StoreKey)
	}
	if cfg, err = Parse("w.json", []byte(`{}`), env); err != nil || cfg.Store != "" {
		t.Fatalf("no store: %q, %v; want the embedded one", cfg.Store, err)
	}
	_, err = Parse("w.json", []byte(`{"store": "mysql://u:${env:PGPASS}@db"}`), env)
	if err == nil || !strings.Contains(err.Error(), "postgres://") || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("a mysql store: %v", err)
	}
}
