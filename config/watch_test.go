package config

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// startWatch watches path and returns a channel that receives one value
// per onChange call.
func startWatch(t *testing.T, path string) <-chan struct{} {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	changes := make(chan struct{}, 100)
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		// 250ms: room for a loaded machine between the steps of one write.
		done <- watch(ctx, path, 250*time.Millisecond, func() { changes <- struct{}{} }, func() { close(ready) })
	}()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("watch: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("watch returned %v", err)
		}
	})
	return changes
}

func expectChange(t *testing.T, changes <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-changes:
	case <-time.After(5 * time.Second):
		t.Fatalf("no change reported after %s", what)
	}
}

func expectQuiet(t *testing.T, changes <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-changes:
		t.Fatalf("change reported after %s", what)
	case <-time.After(400 * time.Millisecond):
	}
}

func TestWatch(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.json")
	write(t, path, `{}`, 0o600)
	changes := startWatch(t, path)

	// A write in several steps is one change.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"listen": `)
	f.Sync()
	f.WriteString(`"127.0.0.1:1"}`)
	f.Close()
	expectChange(t, changes, "write")
	expectQuiet(t, changes, "one debounced write")

	// Editors replace the file by rename.
	tmp := filepath.Join(dir, ".config.json.swp")
	write(t, tmp, `{"listen": "127.0.0.1:2"}`, 0o600)
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	expectChange(t, changes, "rename-replace")
	expectQuiet(t, changes, "rename-replace")

	// ...and it keeps working after that (the watch is on the directory).
	if err := AddServer(path, "a", &Server{Command: "x"}); err != nil {
		t.Fatal(err)
	}
	expectChange(t, changes, "AddServer")

	// Other files in the directory are ignored.
	write(t, filepath.Join(dir, "other.json"), `{}`, 0o600)
	write(t, filepath.Join(dir, "config.json.bak"), `{}`, 0o600)
	os.Remove(filepath.Join(dir, "other.json"))
	expectQuiet(t, changes, "writing other files")

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	expectChange(t, changes, "remove")
}

func TestWatchCreatesDirAndStops(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new", "config.json")
	changes := startWatch(t, path)
	write(t, path, `{}`, 0o600)
	expectChange(t, changes, "create")
}

func TestWatchReturnsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Watch(ctx, filepath.Join(t.TempDir(), "config.json"), func() {}, nil) }()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Watch did not return")
	}
}
