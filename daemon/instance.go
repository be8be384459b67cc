package daemon

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/wardenmcp/warden/config"
	"github.com/wardenmcp/warden/instances"
	"github.com/wardenmcp/warden/internal/state"
	"github.com/wardenmcp/warden/store"
)

// storeOptions say which store the config names: its "store" URL, else the
// embedded one in the state dir.
func (d *Daemon) storeOptions(cfg *config.Config) store.Options {
	return store.Options{URL: cfg.Store, Path: filepath.Join(d.StateDir, state.StoreFile), Key: cfg.StoreKey,
		Instance: instanceName(d.opts.Instance, cfg.Listen, d.StateDir)}
}

// instanceName is this instance's stable name among those sharing a store:
// the one given (serve --instance), else the host's name and the port it
// listens on, which tell apart instances on one machine too; listening on
// any free port (0), the host's name and the state dir, which no two
// running instances share (state.Lock).
func instanceName(given, listen, stateDir string) string {
	if given != "" {
		return given
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	if _, port, err := net.SplitHostPort(listen); err == nil && port != "0" {
		return host + ":" + port
	}
	if abs, err := filepath.Abs(stateDir); err == nil {
		stateDir = abs
	}
	return host + ":" + stateDir
}

// storeError says why the store could not be opened; for a shared one it
// names the database (its password hidden) and what to do.
func storeError(cfg *config.Config, err error) error {
	if cfg.Store == "" {
		return err
	}
	return fmt.Errorf("cannot open the store %s (config %s, field store): %w; check that the database is up and reachable from this machine and that the URL and its user are right, or leave \"store\" out to use the embedded store in the state dir",
		store.Redact(cfg.Store), cfg.Path, err)
}

// heartbeat records this instance in the store while it serves; the
// returned func removes the record (a clean stop).
func (d *Daemon) heartbeat(ctx context.Context, name string) (stop func(), err error) {
	h, err := instances.Start(ctx, d.store, instances.Instance{ID: name, Listen: d.Addr, Version: d.opts.Version})
	if err != nil {
		return nil, fmt.Errorf("record this instance in the store: %w", err)
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := h.Stop(ctx); err != nil {
			d.log.Warn("this instance's record stays in the store until it shows as gone", "err", err)
		}
	}, nil
}

// instanceList answers GET /v1/instances.
func (d *Daemon) instanceList(ctx context.Context) ([]instances.Instance, error) {
	return instances.List(ctx, d.store, time.Now())
}
