package daemon_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardenmcp/warden/api"
	"github.com/wardenmcp/warden/daemon"
	"github.com/wardenmcp/warden/internal/testing/pgtest"
	"github.com/wardenmcp/warden/internal/testing/wardentest"
)

// Two instances on one PostgreSQL store: each lists both (status and
// GET /v1/instances), labels its metrics with its name, and one that stops
// cleanly leaves the list.
func TestInstancesSharingAStore(t *testing.T) {
	url := pgtest.Start(t, pgtest.Options{}).NewDatabase(t)
	dir := t.TempDir()
	var ws []*wardentest.Warden
	for _, name := range []string{"one", "two"} {
		cfg := filepath.Join(dir, name+".json")
		if err := os.WriteFile(cfg, fmt.Appendf(nil, `{"store": %q, "storeKey": "0123456789abcdef0123"}`, url), 0o600); err != nil {
			t.Fatal(err)
		}
		ws = append(ws, wardentest.StartWith(t, cfg, filepath.Join(dir, name), func(o *daemon.Options) { o.Instance = name }))
	}
	var st api.Status
	ws[0].API(t, "GET", "/v1/status", nil, &st)
	if len(st.Instances) != 2 || st.Instances[0].ID != "one" || st.Instances[1].ID != "two" || st.Instances[1].Listen != ws[1].Addr {
		t.Fatalf("status lists %+v; want one and two", st.Instances)
	}

	resp, err := http.Get("http://" + ws[1].Addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `go_goroutines{warden_instance="two"}`) {
		t.Fatalf("two's metrics lack its instance label:\n%.2000s", b)
	}

	ws[1].Stop()
	var list []struct{ ID string }
	ws[0].API(t, "GET", "/v1/instances", nil, &list)
	if len(list) != 1 || list[0].ID != "one" {
		t.Fatalf("after two stopped: %+v; want one alone", list)
	}
}

// A state dir is one daemon's, whatever its store: a second daemon on it
// is refused with a shared store too (the embedded store's file lock does
// not hold the dir then), so that the socket, the server logs and the
// upstream sessions of the dir stay the first one's.
func TestStateDirOneDaemonWithASharedStore(t *testing.T) {
	url := pgtest.Start(t, pgtest.Options{}).NewDatabase(t)
	dir := t.TempDir()
	cfg, stateDir := filepath.Join(dir, "config.json"), filepath.Join(dir, "state")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, `{"store": %q, "storeKey": "0123456789abcdef0123"}`, url), 0o600); err != nil {
		t.Fatal(err)
	}
	wardentest.StartWith(t, cfg, stateDir, func(o *daemon.Options) { o.Instance = "one" })

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready, done := make(chan struct{}), make(chan error, 1)
	go func() {
		done <- daemon.Run(ctx, daemon.Options{ConfigPath: cfg, StateDir: stateDir, Listen: "127.0.0.1:0", Instance: "two",
			Logger: slog.New(slog.DiscardHandler), Ready: func(*daemon.Daemon) { close(ready) }})
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "another warden is running") {
			t.Fatalf("a second daemon on a state dir in use: %v; want it refused", err)
		}
	case <-ready:
		cancel()
		<-done
		t.Fatal("a second daemon started on a state dir another one runs with")
	}
}

// Two instances on one host, each listening on any free port (listen port
// 0) and named by default, both start: their default names differ.
func TestInstancesOnAnyPortBothStart(t *testing.T) {
	url := pgtest.Start(t, pgtest.Options{}).NewDatabase(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, `{"store": %q, "storeKey": "0123456789abcdef0123"}`, url), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"one", "two"} {
		ctx, cancel := context.WithCancel(context.Background())
		ready, done := make(chan struct{}), make(chan error, 1)
		go func() {
			done <- daemon.Run(ctx, daemon.Options{ConfigPath: cfg, StateDir: filepath.Join(dir, name), Listen: "127.0.0.1:0",
				Logger: slog.New(slog.DiscardHandler), Ready: func(*daemon.Daemon) { close(ready) }})
		}()
		t.Cleanup(func() { cancel(); <-done })
		select {
		case err := <-done:
			done <- err // for the cleanup
			t.Fatalf("instance %s did not start: %v", name, err)
		case <-ready:
		}
	}
}
