package pgtest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestStopStart: data written before Stop reads after Start, over the
// socket and over TCP.
func TestStopStart(t *testing.T) {
	s := Start(t, Options{TCP: true})
	ctx := context.Background()
	query := func(url, sql string) {
		t.Helper()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	query(s.URL(), `create table t (x int); insert into t values (1)`)
	s.Stop()
	if conn, err := pgx.Connect(ctx, s.URL()); err == nil {
		conn.Close(ctx)
		t.Fatal("connected to a stopped cluster")
	}
	s.Start()
	query(s.TCPURL(), `select 1 / x from t`)
	query(s.NewDatabase(), `select 1`)
}
