// Package pgtest runs a real PostgreSQL cluster for a test: Debian's
// binaries, initdb into a temp dir, a unix socket in that dir (and, asked,
// 127.0.0.1 on a free port), stopped at the test's end. A missing
// PostgreSQL fails the test: the store's tests must not pass by skipping.
package pgtest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/wardenmcp/warden/internal/testing/testenv"
)

// Options shape the cluster.
type Options struct {
	// TCP also listens on 127.0.0.1 on a free port (Server.TCPURL).
	TCP bool
}

// Server is one running cluster.
type Server struct {
	t    testing.TB
	bin  string // the directory of initdb and postgres
	dir  string // the socket dir; the data is in dir/data
	port int
	tcp  bool
	cred *syscall.Credential // nil: run as ourselves
	dbs  atomic.Int64
	proc *testenv.Process // the running postmaster
}

// Start initdbs and starts a cluster with a database "warden"; it stops
// and its files go at the end of t.
func Start(t testing.TB, o Options) *Server {
	t.Helper()
	s := &Server{t: t, bin: binDir(t), port: 5432, tcp: o.TCP}
	if os.Geteuid() == 0 {
		// initdb and postgres refuse root: run them as nobody, in a dir
		// nobody owns.
		s.cred = nobody(t)
	}
	// Not t.TempDir: its parents are root's alone, and the socket path
	// must stay short (107 bytes).
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	s.dir = dir
	if s.cred != nil {
		if err := os.Chown(dir, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			t.Fatal(err)
		}
	}
	if o.TCP {
		s.port = freePort(t)
	}
	s.run("initdb", "-D", s.data(), "-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions")
	listen := ""
	if o.TCP {
		listen = "127.0.0.1"
	}
	conf := fmt.Sprintf(`
listen_addresses = '%s'
port = %d
unix_socket_directories = '%s'
fsync = off
synchronous_commit = off
full_page_writes = off
shared_buffers = 16MB
max_connections = 100
deadlock_timeout = 100ms
`, listen, s.port, dir)
	f, err := os.OpenFile(filepath.Join(s.data(), "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err == nil {
		_, err = f.WriteString(conf)
		f.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	s.Start(t)
	s.exec(t, "postgres", `create database warden`)
	return s
}

// URL is the database "warden" over the unix socket.
func (s *Server) URL() string { return s.url("warden", false) }

// TCPURL is the database "warden" over 127.0.0.1 (Options.TCP).
func (s *Server) TCPURL() string {
	if !s.tcp {
		s.t.Fatal("pgtest: TCPURL without Options.TCP")
	}
	return s.url("warden", true)
}

// Port is the TCP port (Options.TCP).
func (s *Server) Port() int { return s.port }

// NewDatabase creates an empty database and returns its URL over the unix
// socket: a fresh store for each test on one cluster. t is the test that
// asks.
func (s *Server) NewDatabase(t testing.TB) string {
	t.Helper()
	name := "db" + strconv.FormatInt(s.dbs.Add(1), 10)
	s.exec(t, "postgres", `create database `+name)
	return s.url(name, false)
}

func (s *Server) url(db string, tcp bool) string {
	if tcp {
		return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.port, db)
	}
	return fmt.Sprintf("postgres://postgres@/%s?host=%s&port=%d", db, s.dir, s.port)
}

// Stop shuts the cluster down (fast: sessions are ended), keeping its data.
// t is the test that asks (a subtest, say); the cluster stays Start's.
func (s *Server) Stop(t testing.TB) {
	t.Helper()
	if err := s.proc.Signal(syscall.SIGINT); err != nil {
		t.Fatalf("pgtest: stopping PostgreSQL: %v", err)
	}
	if err := s.proc.Wait(time.Minute); err != nil {
		t.Fatalf("pgtest: stopping PostgreSQL: %v\n%s", err, s.proc.Output())
	}
}

// Start starts the cluster again after Stop, on the same data and socket,
// and waits until it accepts connections. The server is the child of this
// test process (killed if it dies) and is stopped at the end of the test
// that called pgtest.Start.
func (s *Server) Start(t testing.TB) {
	t.Helper()
	cmd := exec.Command(filepath.Join(s.bin, "postgres"), "-D", s.data())
	cmd.Dir = s.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	if s.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	}
	p := testenv.StartProcess(s.t, cmd)
	s.proc = p
	s.t.Cleanup(func() { // before testenv's SIGTERM, which waits for every client to leave
		p.Signal(syscall.SIGINT) // fast shutdown; ESRCH once stopped is fine
		p.Wait(time.Minute)
	})
	testenv.WaitFor(t, time.Minute, "PostgreSQL to accept connections", func() bool {
		if s.proc.Exited() {
			t.Fatalf("pgtest: PostgreSQL exited: %v\n%s", s.proc.Err(), s.proc.Output())
		}
		conn, err := pgx.Connect(context.Background(), s.url("postgres", false))
		if err == nil {
			conn.Close(context.Background())
		}
		return err == nil
	})
}

func (s *Server) data() string { return filepath.Join(s.dir, "data") }

// run runs one of PostgreSQL's programs as the cluster's user.
func (s *Server) run(name string, args ...string) {
	s.t.Helper()
	cmd := exec.Command(filepath.Join(s.bin, name), args...)
	cmd.Dir = s.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	if s.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		s.t.Fatalf("pgtest: %s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// Dump is what pg_dump writes of the database "warden": its backup.
func (s *Server) Dump(t testing.TB) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(s.bin, "pg_dump"), "-h", s.dir, "-p", strconv.Itoa(s.port), "-U", "postgres", "warden")
	cmd.Dir = s.dir
	if s.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("pgtest: pg_dump: %v\n%s", err, stderr.String())
	}
	return string(out)
}

// exec runs one SQL statement in db as the superuser.
func (s *Server) exec(t testing.TB, db, sql string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, s.url(db, false))
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("pgtest: %s: %v", sql, err)
	}
}

// binDir finds PostgreSQL's programs: on PATH, else Debian's newest
// /usr/lib/postgresql/VERSION/bin. Missing, the test fails.
func binDir(t testing.TB) string {
	dir, err := findBin("/usr/lib/postgresql/*/bin")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// findBin looks for initdb and postgres on PATH, then in the newest of the
// directories debian (a glob) names.
func findBin(debian string) (string, error) {
	has := func(dir string) bool {
		_, err1 := os.Stat(filepath.Join(dir, "initdb"))
		_, err2 := os.Stat(filepath.Join(dir, "postgres"))
		return err1 == nil && err2 == nil
	}
	if p, err := exec.LookPath("postgres"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil && has(filepath.Dir(real)) {
			return filepath.Dir(real), nil // with the other programs (pg_dump), not only the linked ones
		}
		if has(filepath.Dir(p)) {
			return filepath.Dir(p), nil
		}
	}
	dirs, _ := filepath.Glob(debian)
	slices.SortFunc(dirs, func(a, b string) int { return version(a) - version(b) })
	for i := len(dirs) - 1; i >= 0; i-- {
		if has(dirs[i]) {
			return dirs[i], nil
		}
	}
	return "", fmt.Errorf("pgtest: PostgreSQL is not installed (no initdb and postgres on PATH or in %s): apt-get install postgresql", debian)
}

func version(dir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return n
}

func nobody(t testing.TB) *syscall.Credential {
	u, err := user.Lookup("nobody")
	if err != nil {
		t.Fatalf("pgtest: running as root, PostgreSQL must run as another user: %v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
}

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
