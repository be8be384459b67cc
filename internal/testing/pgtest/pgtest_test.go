package pgtest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
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
	s.Stop(t)
	if conn, err := pgx.Connect(ctx, s.URL()); err == nil {
		conn.Close(ctx)
		t.Fatal("connected to a stopped cluster")
	}
	s.Start(t)
	query(s.TCPURL(), `select 1 / x from t`)
	query(s.NewDatabase(t), `select 1`)
}

// TestFindBin: the newest Debian version wins over older ones, and nothing
// found is an error that says what to install.
func TestFindBin(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	root := t.TempDir()
	for _, v := range []string{"9", "15", "13"} {
		dir := filepath.Join(root, v, "bin")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"initdb", "postgres"} {
			if err := os.WriteFile(filepath.Join(dir, name), nil, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	if dir, err := findBin(filepath.Join(root, "*", "bin")); err != nil || dir != filepath.Join(root, "15", "bin") {
		t.Errorf("findBin = %s, %v; want version 15's", dir, err)
	}
	if _, err := findBin(filepath.Join(t.TempDir(), "*", "bin")); err == nil || !strings.Contains(err.Error(), "apt-get install postgresql") {
		t.Errorf("findBin with no PostgreSQL: %v; want an error naming apt-get install postgresql", err)
	}
}
