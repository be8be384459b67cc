package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wardenmcp/warden/internal/testing/pgtest"
	"github.com/wardenmcp/warden/store"
	"github.com/wardenmcp/warden/store/storetest"
)

func openPostgres(t *testing.T, url string) store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), store.Options{URL: url, Key: storetest.Key})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestPostgres(t *testing.T) {
	pg := pgtest.Start(t, pgtest.Options{})
	storetest.Run(t, func(t *testing.T) store.Store { return openPostgres(t, pg.NewDatabase(t)) })
}

func TestPostgresShared(t *testing.T) {
	pg := pgtest.Start(t, pgtest.Options{})
	storetest.RunShared(t, storetest.Shared{
		Open:  func(t *testing.T) store.Store { return openPostgres(t, pg.URL()) },
		Stop:  func(t *testing.T) { pg.Stop(t) },
		Start: func(t *testing.T) { pg.Start(t) },
	})
}

// TestPostgresUnavailablePassword: failures to reach PostgreSQL are
// ErrUnavailable and never show the URL's password.
func TestPostgresUnavailablePassword(t *testing.T) {
	pg := pgtest.Start(t, pgtest.Options{TCP: true})
	const password = "pw-s3cret-never-shown"
	url := strings.Replace(pg.TCPURL(), "postgres@", "postgres:"+password+"@", 1)
	s := openPostgres(t, url) // trust: any password connects
	defer s.Close()
	pg.Stop(t)
	err := s.Update(context.Background(), func(tx store.Tx) error { return tx.Put("b", []byte("k"), nil) })
	if !errors.Is(err, store.ErrUnavailable) || strings.Contains(err.Error(), password) {
		t.Errorf("Update with the database down: %v; want ErrUnavailable without the password", err)
	}
	_, err = store.Open(context.Background(), store.Options{URL: url, Key: storetest.Key})
	if !errors.Is(err, store.ErrUnavailable) || strings.Contains(err.Error(), password) || !strings.Contains(err.Error(), "xxxxx") {
		t.Errorf("Open with the database down: %v; want ErrUnavailable naming the URL without the password", err)
	}
	for _, bad := range []string{url + "&sslmode=bogus", pg.TCPURL() + "&password=" + password + "&sslmode=bogus"} {
		_, err = store.Open(context.Background(), store.Options{URL: bad, Key: storetest.Key})
		if err == nil || strings.Contains(err.Error(), password) {
			t.Errorf("Open with a bad URL: %v; want an error without the password", err)
		}
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://u:secret@db:5432/w":           "postgres://u:xxxxx@db:5432/w",
		"postgresql://u:p@ss:w@rd@db/w?x=1":       "postgresql://u:xxxxx@db/w?x=1",
		"postgres://u@db/w":                       "postgres://u@db/w",
		"postgres://db/w":                         "postgres://db/w",
		"not a url":                               "not a url",
		"postgres://u:secret@/w?host=/tmp/sock":   "postgres://u:xxxxx@/w?host=/tmp/sock",
		"postgres://u@h/w?password=a@b&sslmode=x": "postgres://u@h/w?password=xxxxx&sslmode=x",
		"postgres://u:p@h/w?sslmode=x&password=q": "postgres://u:xxxxx@h/w?sslmode=x&password=xxxxx",
	} {
		if got := store.Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestPostgresInstanceNameTaken: a second instance under a running one's
// name is refused, since Alive could not tell them apart.
func TestPostgresInstanceNameTaken(t *testing.T) {
	pg := pgtest.Start(t, pgtest.Options{})
	o := store.Options{URL: pg.URL(), Key: storetest.Key, Instance: "one"}
	s, err := store.Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if again, err := store.Open(context.Background(), o); err == nil || !strings.Contains(err.Error(), "already running") {
		if again != nil {
			again.Close()
		}
		t.Errorf("opening a second instance named one: %v; want refused", err)
	}
}

// TestPostgresViewSnapshot: a View reads one snapshot, as bbolt's does:
// an Update committed meanwhile is not seen by its later queries.
func TestPostgresViewSnapshot(t *testing.T) {
	pg := pgtest.Start(t, pgtest.Options{})
	s := openPostgres(t, pg.URL())
	defer s.Close()
	ctx := context.Background()
	put := func(v string) error {
		return s.Update(ctx, func(tx store.Tx) error { return tx.Put("b", []byte("k"), []byte(v)) })
	}
	if err := put("before"); err != nil {
		t.Fatal(err)
	}
	err := s.View(ctx, func(tx store.Tx) error {
		if _, err := tx.Count("b"); err != nil { // the snapshot is taken here
			return err
		}
		if err := put("after"); err != nil {
			return err
		}
		v, err := tx.Get("b", []byte("k"))
		if string(v) != "before" {
			t.Errorf("the View read %q, committed after it began; want before", v)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// holdLock holds lock name in an Update of s until release, which answers
// the Update's error.
func holdLock(s store.Store, name string) (release func() error) {
	holding, rel := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- s.Update(context.Background(), func(tx store.Tx) error {
			err := tx.Lock(name)
			close(holding)
			<-rel
			return err
		})
	}()
	<-holding
	return func() error { close(rel); return <-done }
}

// TestPostgresCancelled: an Update its caller cancels, waiting for a lock,
// fails with the cancellation, not as if the store were unavailable.
func TestPostgresCancelled(t *testing.T) {
	pg := pgtest.Start(t, pgtest.Options{})
	s := openPostgres(t, pg.URL())
	defer s.Close()
	release := holdLock(s, "l")
	ctx, cancel := context.WithCancel(context.Background())
	waiting := make(chan error, 1)
	go func() { waiting <- s.Update(ctx, func(tx store.Tx) error { return tx.Lock("l") }) }()
	conn := connect(t, pg.URL())
	for blocked := false; !blocked; { // until the Update waits for the lock
		err := conn.QueryRow(context.Background(), `select exists (select 1 from pg_locks where locktype = 'advisory' and not granted)`).Scan(&blocked)
		if err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	err := <-waiting
	if err := release(); err != nil {
		t.Fatal(err)
	}
	if err == nil || errors.Is(err, store.ErrUnavailable) || !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled Update: %v; want context.Canceled, not ErrUnavailable", err)
	}
}

// TestPostgresDeadline: an Update whose caller's deadline passes while it
// waits for a lock fails with the deadline, not as if the store were
// unavailable (the database answered all along).
func TestPostgresDeadline(t *testing.T) {
	pg := pgtest.Start(t, pgtest.Options{})
	s := openPostgres(t, pg.URL())
	defer s.Close()
	release := holdLock(s, "l")
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond) // passes while the lock is held
	defer cancel()
	err := s.Update(ctx, func(tx store.Tx) error { return tx.Lock("l") })
	if err := release(); err != nil {
		t.Fatal(err)
	}
	if errors.Is(err, store.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("an Update past its deadline: %v; want context.DeadlineExceeded, not ErrUnavailable", err)
	}
}

// TestPostgresConnectionLost: when the network to PostgreSQL drops every
// connection (reset, closed, or lost without the server noticing), calls
// fail with ErrUnavailable; once it is back, watchers resync and calls
// work.
func TestPostgresConnectionLost(t *testing.T) {
	pg := pgtest.Start(t, pgtest.Options{TCP: true})
	for name, mode := range map[string]cutMode{"reset": reset, "closed": closed, "unnoticed": unnoticed} {
		t.Run(name, func(t *testing.T) {
			p := startProxy(t, fmt.Sprintf("127.0.0.1:%d", pg.Port()))
			s := openPostgres(t, strings.Replace(pg.TCPURL(), fmt.Sprintf("127.0.0.1:%d", pg.Port()), p.addr, 1))
			defer s.Close()
			ch := storetest.Watch(t, s, "t")
			put := func() error {
				return s.Update(context.Background(), func(tx store.Tx) error { return tx.Put("b", []byte("k"), []byte("v")) })
			}
			if err := put(); err != nil {
				t.Fatal(err)
			}
			p.cut(mode)
			if err := put(); !errors.Is(err, store.ErrUnavailable) {
				t.Fatalf("Update with the network down: %v; want ErrUnavailable", err)
			}
			p.restore()
			if e := storetest.Next(t, ch); !e.Resync {
				t.Fatalf("after the network came back: %+v, want a Resync", e)
			}
			if err := put(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestPostgresLostLockHolder: an instance whose network drops in the middle
// of an Update holding a lock, without the server noticing, does not keep
// the lock from every other instance: PostgreSQL ends the silent
// transaction after idleInTransaction.
func TestPostgresLostLockHolder(t *testing.T) {
	defer store.SetIdleInTransaction(store.SetIdleInTransaction(time.Second))
	pg := pgtest.Start(t, pgtest.Options{TCP: true})
	p := startProxy(t, fmt.Sprintf("127.0.0.1:%d", pg.Port()))
	lost := openPostgres(t, strings.Replace(pg.TCPURL(), fmt.Sprintf("127.0.0.1:%d", pg.Port()), p.addr, 1))
	defer lost.Close()
	other := openPostgres(t, pg.URL())
	defer other.Close()

	release := holdLock(lost, "l")
	p.cut(unnoticed) // the server still holds the transaction and its lock
	if err := release(); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("the Update whose network dropped: %v; want ErrUnavailable", err)
	}
	// A bound for a test that would otherwise wait forever, not a figure.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := other.Update(ctx, func(tx store.Tx) error { return tx.Lock("l") }); err != nil {
		t.Fatalf("another instance taking the lock the lost transaction held: %v", err)
	}
}
