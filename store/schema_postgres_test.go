package store_test

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/wardenmcp/warden/internal/testing/pgtest"
	"github.com/wardenmcp/warden/store"
	"github.com/wardenmcp/warden/store/storetest"
)

// connect opens a plain connection to url, closed at the test's end.
func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// schemaVersions lists the versions warden_schema records.
func schemaVersions(t *testing.T, conn *pgx.Conn) []int {
	t.Helper()
	rows, _ := conn.Query(context.Background(), `select version from warden_schema order by version`)
	versions, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		t.Fatal(err)
	}
	return versions
}

// upTo is 1..n, the versions of a schema migrated to n.
func upTo(n int) []int {
	var out []int
	for v := 1; v <= n; v++ {
		out = append(out, v)
	}
	return out
}

// TestPostgresMigrateTogether: instances opening a new database at once
// migrate it once, and all open. The first to migrate is held, having read
// the schema's version, until another waits for the migration lock (with
// the lock) or has read the same version too (without it, when both would
// run the same migrations and one would fail).
func TestPostgresMigrateTogether(t *testing.T) {
	pg := pgtest.Start(t, pgtest.Options{})
	url := pg.NewDatabase(t)
	watch := connect(t, url)
	const opens = 6
	var first atomic.Bool
	arrived := make(chan struct{}, opens)
	defer store.SetMigrating(store.SetMigrating(func(int) {
		if !first.CompareAndSwap(false, true) {
			arrived <- struct{}{}
			return
		}
		for {
			select {
			case <-arrived:
				return
			default:
			}
			var waiting bool
			err := watch.QueryRow(context.Background(),
				`select exists (select 1 from pg_locks where locktype = 'advisory' and not granted)`).Scan(&waiting)
			if err != nil || waiting {
				return
			}
			time.Sleep(time.Millisecond)
		}
	}))
	errs := make(chan error, opens)
	for range opens {
		go func() {
			s, err := store.Open(context.Background(), store.Options{URL: url, Key: storetest.Key})
			if err == nil {
				err = s.Close()
			}
			errs <- err
		}()
	}
	for range opens {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if got, want := schemaVersions(t, watch), upTo(len(store.Migrations())); !slices.Equal(got, want) {
		t.Errorf("schema versions %v; want %v", got, want)
	}
}

// TestPostgresSchemaUpgrade: a database a Warden that knew fewer migrations
// made is brought up to date when this one opens it, once, and keeps its
// records.
func TestPostgresSchemaUpgrade(t *testing.T) {
	pg := pgtest.Start(t, pgtest.Options{})
	url := pg.NewDatabase(t)
	ctx := context.Background()
	older := openPostgres(t, url) // the older Warden: every migration but the probe
	update(t, older, func(tx store.Tx) error { return tx.Put("tools/github", []byte("create_issue"), []byte("approved")) })
	older.Close()

	known := store.Migrations()
	probe := `create table warden_probe (n int); insert into warden_probe values (1)`
	defer store.SetMigrations(store.SetMigrations(append(slices.Clip(known), probe)))
	conn := connect(t, url)
	for range 2 { // the second open finds it up to date
		s := openPostgres(t, url)
		var v []byte
		err := s.View(ctx, func(tx store.Tx) (err error) {
			v, err = tx.Get("tools/github", []byte("create_issue"))
			return err
		})
		s.Close()
		if err != nil || string(v) != "approved" {
			t.Fatalf("the record after the upgrade: %q, %v; want approved", v, err)
		}
	}
	if got, want := schemaVersions(t, conn), upTo(len(known)+1); !slices.Equal(got, want) {
		t.Errorf("schema versions %v; want %v", got, want)
	}
	var probes int
	if err := conn.QueryRow(ctx, `select count(*) from warden_probe`).Scan(&probes); err != nil || probes != 1 {
		t.Errorf("the new migration ran %d times, %v; want once", probes, err)
	}
}

// TestPostgresSchemaNewer: a database a later Warden migrated further is
// refused, saying to upgrade this Warden, and left as it is.
func TestPostgresSchemaNewer(t *testing.T) {
	pg := pgtest.Start(t, pgtest.Options{})
	url := pg.NewDatabase(t)
	openPostgres(t, url).Close()
	conn := connect(t, url)
	newer := len(store.Migrations()) + 1
	if _, err := conn.Exec(context.Background(), `insert into warden_schema (version) values ($1)`, newer); err != nil {
		t.Fatal(err)
	}
	s, err := store.Open(context.Background(), store.Options{URL: url, Key: storetest.Key})
	if err == nil {
		s.Close()
	}
	if err == nil || !strings.Contains(err.Error(), "newer than this Warden") || !strings.Contains(err.Error(), "upgrade this Warden") {
		t.Errorf("opening a schema of version %d: %v; want refused, saying to upgrade Warden", newer, err)
	}
	if got, want := schemaVersions(t, conn), upTo(newer); !slices.Equal(got, want) {
		t.Errorf("schema versions after the refusal %v; want %v", got, want)
	}
}
