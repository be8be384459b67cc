package daemon

import (
	"errors"
	"fmt"
	"time"

	"github.com/wardenmcp/warden/store"
	"go.etcd.io/bbolt"
)

// legacyDB is the bbolt file of the packages not on store.Store yet: the
// embedded store's own, or, beside a shared store, the state dir's
// warden.db, which they keep to this instance until they move. close is
// nil when the store owns the file.
func legacyDB(st store.Store, path string) (db *bbolt.DB, close func() error, err error) {
	if db := store.BoltDB(st); db != nil {
		return db, nil, nil
	}
	db, err = bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second})
	if errors.Is(err, bbolt.ErrTimeout) {
		return nil, nil, fmt.Errorf("%s is in use: another warden is running with this state dir; stop it or use --state-dir", path)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("open %s: %w", path, err)
	}
	return db, db.Close, nil
}
