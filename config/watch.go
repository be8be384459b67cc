package config

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// watchDebounce lets a burst of events (truncate, write, write; or an
// editor's write-temp-then-rename) settle into one reload.
const watchDebounce = 100 * time.Millisecond

// Watch calls onChange after the config file at path changes: written,
// created, replaced by rename, removed or touched. It watches the file's
// directory, not the file, because editors and AddServer replace the file
// by rename, which would end a watch on the old inode; when path is a
// symlink the target's directory is watched too. Events for other files are
// ignored and bursts are debounced (~100ms).
//
// onChange runs on Watch's goroutine, one call at a time; it should reload
// with Load and keep the running config when that fails. ready, if set, is
// called once watching has begun: a change after it is never missed. The
// directory is created (0700) when missing. Watch returns nil when ctx is
// done, or an error if the watch cannot be set up. A lost-events overflow
// also calls onChange, since the file may have changed.
func Watch(ctx context.Context, path string, onChange, ready func()) error {
	return watch(ctx, path, watchDebounce, onChange, ready)
}

// watch is Watch with the debounce.
func watch(ctx context.Context, path string, debounce time.Duration, onChange func(), ready func()) error {
	if path == "" {
		path = DefaultPath()
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	targets := map[string]bool{abs: true}
	dirs := []string{filepath.Dir(abs)}
	if real, err := filepath.EvalSymlinks(abs); err == nil && real != abs {
		targets[real] = true
		dirs = append(dirs, filepath.Dir(real))
	}
	if err := os.MkdirAll(dirs[0], 0o700); err != nil {
		return err
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer w.Close()
	for _, d := range dirs {
		if err := w.Add(d); err != nil {
			return err
		}
	}
	if ready != nil {
		ready()
	}

	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return errors.New("config: file watcher closed")
			}
			if targets[filepath.Clean(ev.Name)] {
				timer.Reset(debounce)
			}
		case err, ok := <-w.Errors:
			if !ok {
				return errors.New("config: file watcher closed")
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				timer.Reset(debounce)
			}
		case <-timer.C:
			onChange()
		}
	}
}
