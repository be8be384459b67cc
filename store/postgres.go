package store

import (
	"bytes"
	"context"
	"encoding/ascii85"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// pgStore keeps the buckets in one PostgreSQL table shared by every
// instance. Locks are advisory locks; events are NOTIFY on one channel,
// which PostgreSQL delivers at commit, received on a dedicated listener
// connection that also holds this instance's liveness lock.
type pgStore struct {
	pool     *pgxpool.Pool
	url      string // redacted, for messages
	instance string
	seal     *sealer
	hub      *hub
	stop     context.CancelFunc
	done     chan struct{}
	session  uint32 // the listener's backend pid; only the listener uses it
}

// channel is the one NOTIFY channel every instance listens on.
const channel = "warden"

// migrations bring the schema from version i to i+1. Append only.
var migrations = []string{
	`create table warden_kv (
		bucket bytea not null, -- a path, "a/b"; any bytes, as in bbolt
		key bytea not null,
		value bytea not null,
		primary key (bucket, key))`,
}

// migrating is called under the migration lock with the schema version
// found, before any migration runs: a test's hook (export_test.go).
var migrating = func(version int) {}

// idleInTransaction is how long PostgreSQL keeps a transaction whose
// client has gone silent (idle_in_transaction_session_timeout). A
// connection lost in the middle of an Update that holds a Lock, without the
// server noticing (a network that drops, a host that dies), would otherwise
// keep the lock from every instance until TCP keepalive ends the session:
// hours by default. Every transaction here is short and never waits on
// anything but the database.
var idleInTransaction = 15 * time.Second

// sessionSetup sets on every connection, unless the URL sets them (given):
// idleInTransaction, and TCP keepalive that makes the server notice a dead
// client within about 25 s instead of the system's two hours and more, so
// that a dead instance's liveness lock (Alive) and its locks go with it.
// Keepalive waits while the server has data the client has not
// acknowledged (events for a listener whose network dropped: the system
// retries for some 15 minutes), so tcp_user_timeout bounds that wait to
// the same 25 s. (These settings do nothing over a Unix socket.) They are SET once
// connected rather than sent at startup, which a connection pooler in front
// of PostgreSQL may refuse.
func sessionSetup(given map[string]string) pgconn.AfterConnectFunc {
	params := map[string]string{
		"idle_in_transaction_session_timeout": strconv.FormatInt(idleInTransaction.Milliseconds(), 10),
		"tcp_keepalives_idle":                 "10",
		"tcp_keepalives_interval":             "5",
		"tcp_keepalives_count":                "3",
		"tcp_user_timeout":                    "25000", // ms
	}
	var sets []string
	for k, v := range params {
		if _, set := given[k]; !set {
			sets = append(sets, "set "+k+" = "+v)
		}
	}
	slices.Sort(sets)
	q := strings.Join(sets, "; ")
	return func(ctx context.Context, c *pgconn.PgConn) error {
		if q == "" {
			return nil
		}
		_, err := c.Exec(ctx, q).ReadAll()
		return err
	}
}

// Advisory lock keys: a 64-bit hash of a kind and a name, so Warden's locks
// do not meet another application's in the same database.
func lockKey(kind, name string) int64 {
	h := fnv.New64a()
	_, _ = io.WriteString(h, "warden\x00"+kind+"\x00"+name)
	return int64(h.Sum64())
}

func openPostgres(ctx context.Context, url, instance string, seal *sealer) (Store, error) {
	redacted := Redact(url)
	if strings.ContainsAny(instance, "\n\x00") || !utf8.ValidString(instance) {
		return nil, fmt.Errorf("store: instance name %q: want printable text", instance)
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("store %s: %v", redacted, err)
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = 5 * time.Second // unreachable is an answer, not a hang
	}
	cfg.ConnConfig.AfterConnect = sessionSetup(cfg.ConnConfig.RuntimeParams)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("store %s: %v", redacted, err)
	}
	s := &pgStore{pool: pool, url: redacted, instance: instance, seal: seal, hub: newHub(), done: make(chan struct{})}
	fail := func(err error) (Store, error) {
		pool.Close()
		s.hub.close()
		return nil, err
	}
	if err := s.migrate(ctx); err != nil {
		return fail(err)
	}
	conn, err := s.listener(ctx, cfg.ConnConfig, false)
	if err != nil {
		return fail(err)
	}
	lctx, stop := context.WithCancel(context.Background())
	s.stop = stop
	go s.listen(lctx, cfg.ConnConfig, conn)
	return s, nil
}

// migrate brings the schema up to date under a session advisory lock, so
// that instances starting together migrate once.
func (s *pgStore) migrate(ctx context.Context) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return s.fail("connect", err)
	}
	defer conn.Release()
	key := lockKey("migrate", "")
	if _, err := conn.Exec(ctx, `select pg_advisory_lock($1)`, key); err != nil {
		return s.fail("migrate", err)
	}
	defer func() { _, _ = conn.Exec(context.Background(), `select pg_advisory_unlock($1)`, key) }() // failing, the session's end releases it
	if _, err := conn.Exec(ctx, `create table if not exists warden_schema (version int primary key)`); err != nil {
		return s.fail("migrate", err)
	}
	var version int
	if err := conn.QueryRow(ctx, `select coalesce(max(version), 0) from warden_schema`).Scan(&version); err != nil {
		return s.fail("migrate", err)
	}
	if version > len(migrations) {
		return fmt.Errorf("store %s: the schema is version %d, newer than this Warden knows (%d): a later Warden upgraded it; upgrade this Warden to the version the other instances run (warden version shows it)",
			s.url, version, len(migrations))
	}
	migrating(version)
	for v := version; v < len(migrations); v++ {
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, migrations[v]); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `insert into warden_schema (version) values ($1)`, v+1)
			return err
		})
		if err != nil {
			return s.fail(fmt.Sprintf("migrate to version %d", v+1), err)
		}
	}
	return nil
}

// listener connects the dedicated connection: it listens on the channel
// and takes this instance's liveness lock. With rejoin (the store was lost)
// it runs the OnRejoin funcs in between, on fresh pool connections: nothing
// published meanwhile is missed, and no instance sees this one alive before
// they stored what they hold.
func (s *pgStore) listener(ctx context.Context, cfg *pgx.ConnConfig, rejoin bool) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, s.fail("connect", err)
	}
	_, err = conn.Exec(ctx, `listen `+channel)
	if err == nil && rejoin {
		s.pool.Reset() // its connections died with the listener's
		if err = s.hub.rejoin(ctx); err != nil {
			err = fmt.Errorf("rejoin: %w", err)
		}
	}
	held := false
	if err == nil {
		held, err = s.lockInstance(ctx, conn)
	}
	if err != nil || !held {
		conn.Close(context.Background())
	}
	if err != nil {
		return nil, s.fail("listen", err)
	}
	if !held {
		return nil, fmt.Errorf("store %s: an instance named %q is already running: give each instance its own name", s.url, s.instance)
	}
	s.session = conn.PgConn().PID()
	return conn, nil
}

// lockInstance takes this instance's liveness lock on conn. If this
// instance's previous listener session still holds it (the network
// dropped; the server has not noticed), it ends that session first.
func (s *pgStore) lockInstance(ctx context.Context, conn *pgx.Conn) (bool, error) {
	key := lockKey("instance", s.instance)
	var held bool
	err := conn.QueryRow(ctx, `select pg_try_advisory_lock($1)`, key).Scan(&held)
	if err != nil || held || s.session == 0 {
		return held, err
	}
	hi, lo := lockHalves(key)
	_, err = conn.Exec(ctx, `select pg_terminate_backend(pid, 5000) from pg_locks where `+lockHeld+` and pid = $3`,
		hi, lo, int64(s.session))
	if err == nil {
		err = conn.QueryRow(ctx, `select pg_try_advisory_lock($1)`, key).Scan(&held)
	}
	return held, err
}

// lockHeld is the condition for the rows of pg_locks that show the
// advisory lock $1<<32|$2 (lockHalves) held in this database.
const lockHeld = `locktype = 'advisory' and granted and objsubid = 1
	and database = (select oid from pg_database where datname = current_database())
	and classid::bigint = $1 and objid::bigint = $2`

// lockHalves splits an advisory lock key as pg_locks shows it.
func lockHalves(key int64) (hi, lo int64) {
	return int64(uint64(key) >> 32), int64(uint64(key) & 0xffffffff)
}

// listen hands notifications to the hub until ctx ends. On losing the
// connection it reconnects with backoff (rejoining: see listener) and tells
// every watcher to reload.
func (s *pgStore) listen(ctx context.Context, cfg *pgx.ConnConfig, conn *pgx.Conn) {
	defer close(s.done)
	for {
		n, err := conn.WaitForNotification(ctx)
		if ctx.Err() != nil {
			// Release the liveness lock before returning, so Alive is false
			// once Close returns.
			uctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_, _ = conn.Exec(uctx, `select pg_advisory_unlock_all()`)
			conn.Close(uctx)
			cancel()
			return
		}
		if err == nil {
			if e, ok := decodeEvent(n.Payload); ok {
				s.hub.deliver(e)
			}
			continue
		}
		conn.Close(context.Background())
		if conn = s.reconnect(ctx, cfg); conn == nil {
			return
		}
		s.hub.resync()
	}
}

// reconnect retries the listener with backoff until it connects or ctx ends
// (nil).
func (s *pgStore) reconnect(ctx context.Context, cfg *pgx.ConnConfig) *pgx.Conn {
	wait := 50 * time.Millisecond
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		if conn, err := s.listener(ctx, cfg, true); err == nil {
			return conn
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// sealer is how Copy and Rekey (sealerOf) reach the store's keys.
func (s *pgStore) sealer() *sealer { return s.seal }

func (s *pgStore) Instance() string { return s.instance }
func (s *pgStore) Shared() bool     { return true }

func (s *pgStore) Watch(topic string, fn func(Event)) func() { return s.hub.watch(topic, fn) }

func (s *pgStore) OnRejoin(fn func(context.Context) error) func() { return s.hub.onRejoin(fn) }

// View reads one snapshot (repeatable read), as bbolt's does, however many
// queries fn makes; read-only, it never fails to serialize.
func (s *pgStore) View(ctx context.Context, fn func(Tx) error) error {
	return s.run(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, fn)
}

func (s *pgStore) Update(ctx context.Context, fn func(Tx) error) error {
	return s.run(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, fn)
}

// Batch is Update: PostgreSQL commits concurrent transactions well enough.
func (s *pgStore) Batch(ctx context.Context, fn func(Tx) error) error { return s.Update(ctx, fn) }

// run runs fn in a transaction, again on a serialization failure or a
// deadlock.
func (s *pgStore) run(ctx context.Context, opts pgx.TxOptions, fn func(Tx) error) error {
	for attempt := 1; ; attempt++ {
		err := pgx.BeginTxFunc(ctx, s.pool, opts, func(tx pgx.Tx) error {
			return fn(sealedTx{&pgTx{ctx: ctx, tx: tx, s: s, write: opts.AccessMode != pgx.ReadOnly}, s.seal})
		})
		var pe *pgconn.PgError
		if errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01") && attempt < 10 {
			continue
		}
		if err != nil && ctx.Err() != nil {
			// The caller gave up (pgx reports a deadline as a network
			// timeout): its reason, not the store's.
			return fmt.Errorf("store %s: %w (%v)", s.url, ctx.Err(), err)
		}
		if err != nil && unavailable(err) {
			return s.fail("", err)
		}
		return err
	}
}

// unavailable reports whether err is a failure to reach PostgreSQL rather
// than an answer from it.
func unavailable(err error) bool {
	var ce *pgconn.ConnectError
	var ne net.Error
	var pe *pgconn.PgError
	switch {
	case errors.As(err, &ce), errors.As(err, &ne), errors.Is(err, pgconn.ErrConnClosed),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF): // the server went mid-answer
		return true
	case errors.As(err, &pe):
		// 08: connection exception; 57P01-3: shut down, crashed, starting.
		return strings.HasPrefix(pe.Code, "08") || slices.Contains([]string{"57P01", "57P02", "57P03"}, pe.Code)
	}
	return false
}

// fail turns a failure to reach the store into ErrUnavailable, naming the
// store without its password; other errors pass through.
func (s *pgStore) fail(doing string, err error) error {
	if !unavailable(err) {
		if doing == "" {
			return err
		}
		return fmt.Errorf("store %s: %s: %w", s.url, doing, err)
	}
	return fmt.Errorf("%w: %s: %v", ErrUnavailable, s.url, err)
}

func (s *pgStore) Close() error {
	s.stop()
	<-s.done
	s.pool.Close()
	s.hub.close()
	return nil
}

type pgTx struct {
	ctx   context.Context
	tx    pgx.Tx
	s     *pgStore
	write bool
	seq   int // numbers this transaction's events: NOTIFY drops duplicates
}

// bucketName is bucket as the bucket column holds it.
func bucketName(bucket string) ([]byte, error) {
	if bucket == "" {
		return nil, errors.New("store: empty bucket name")
	}
	return []byte(bucket), nil
}

func (t *pgTx) Get(bucket string, key []byte) ([]byte, error) {
	b, err := bucketName(bucket)
	if err != nil {
		return nil, err
	}
	var v []byte
	err = t.tx.QueryRow(t.ctx, `select value from warden_kv where bucket = $1 and key = $2`, b, key).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if v == nil && err == nil {
		v = []byte{}
	}
	return v, err
}

func (t *pgTx) Put(bucket string, key, value []byte) error {
	b, err := bucketName(bucket)
	if err != nil {
		return err
	}
	if len(key) == 0 {
		return errors.New("store: empty key")
	}
	if value == nil {
		value = []byte{}
	}
	_, err = t.tx.Exec(t.ctx, `insert into warden_kv (bucket, key, value) values ($1, $2, $3)
		on conflict (bucket, key) do update set value = excluded.value`, b, key, value)
	return err
}

func (t *pgTx) Delete(bucket string, key []byte) error {
	b, err := bucketName(bucket)
	if err != nil {
		return err
	}
	_, err = t.tx.Exec(t.ctx, `delete from warden_kv where bucket = $1 and key = $2`, b, key)
	return err
}

// scanPage is how many rows Scan reads at a time: fn may use the
// transaction between pages.
const scanPage = 256

func (t *pgTx) Scan(bucket string, prefix []byte, reverse bool, fn func(k, v []byte) error) error {
	b, err := bucketName(bucket)
	if err != nil {
		return err
	}
	// Keys in [lo, hi); hi nil: no upper bound. Each page narrows the range
	// past the last key read.
	lo, hi := prefix, prefixEnd(prefix)
	if lo == nil {
		lo = []byte{}
	}
	order := "asc"
	if reverse {
		order = "desc"
	}
	q := `select key, value from warden_kv where bucket = $1 and key >= $2 and ($3::bytea is null or key < $3)
		order by key ` + order + ` limit ` + strconv.Itoa(scanPage)
	for {
		rows, err := t.tx.Query(t.ctx, q, b, lo, hi)
		if err != nil {
			return err
		}
		type kv struct{ k, v []byte }
		page, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (kv, error) {
			var p kv
			err := r.Scan(&p.k, &p.v)
			return p, err
		})
		if err != nil {
			return err
		}
		for _, p := range page {
			if p.v == nil {
				p.v = []byte{}
			}
			if err := fn(p.k, p.v); err != nil {
				if errors.Is(err, ErrStop) {
					return nil
				}
				return err
			}
		}
		if len(page) < scanPage {
			return nil
		}
		last := page[len(page)-1].k
		if reverse {
			hi = last
		} else {
			lo = append(bytes.Clone(last), 0) // the least key after last
		}
	}
}

func (t *pgTx) Count(bucket string) (int, error) {
	b, err := bucketName(bucket)
	if err != nil {
		return 0, err
	}
	var n int
	err = t.tx.QueryRow(t.ctx, `select count(*) from warden_kv where bucket = $1`, b).Scan(&n)
	return n, err
}

// children is the condition for the buckets under $1: those between
// "$1/" and "$10" ('0' follows '/'), compared bytewise, so no character of
// a name is a wildcard.
const children = `bucket > $1 || '/'::bytea and bucket < $1 || '0'::bytea`

func (t *pgTx) Buckets(parent string, fn func(name string) error) error {
	q, args := `select distinct bucket from warden_kv`, []any{}
	if parent != "" {
		q, args = q+` where `+children, []any{[]byte(parent)}
	}
	rows, err := t.tx.Query(t.ctx, q, args...)
	if err != nil {
		return err
	}
	paths, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	if err != nil {
		return err
	}
	var names []string
	for _, p := range paths {
		if parent != "" {
			p = p[len(parent)+1:]
		}
		name, _, _ := strings.Cut(string(p), "/")
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range slices.Compact(names) {
		if err := fn(name); err != nil {
			return err
		}
	}
	return nil
}

func (t *pgTx) DeleteBucket(bucket string) error {
	b, err := bucketName(bucket)
	if err != nil {
		return err
	}
	_, err = t.tx.Exec(t.ctx, `delete from warden_kv where bucket = $1 or (`+children+`)`, b)
	return err
}

func (t *pgTx) Lock(name string) error {
	if err := writable(t.write, "Lock"); err != nil {
		return err
	}
	_, err := t.tx.Exec(t.ctx, `select pg_advisory_xact_lock($1)`, lockKey("lock", name))
	return err
}

func (t *pgTx) Publish(topic string, msg []byte) error {
	if err := checkPublish(t.write, topic, msg); err != nil {
		return err
	}
	if topic == "" || strings.ContainsAny(topic, "\n\x00") || !utf8.ValidString(topic) {
		return fmt.Errorf("store: topic %q: want printable text", topic)
	}
	t.seq++
	payload := encodeEvent(t.seq, Event{Topic: topic, Instance: t.s.instance, Msg: msg})
	if len(payload) >= 8000 {
		return fmt.Errorf("store: the message on %s does not fit a notification with its topic: shorten the topic", topic)
	}
	_, err := t.tx.Exec(t.ctx, `select pg_notify($1, $2)`, channel, payload)
	return err
}

func (t *pgTx) Alive(instance string) (bool, error) {
	hi, lo := lockHalves(lockKey("instance", instance))
	var alive bool
	err := t.tx.QueryRow(t.ctx, `select exists (select 1 from pg_locks where `+lockHeld+`)`, hi, lo).Scan(&alive)
	return alive, err
}

// A notification's payload is text: a kind ('r' raw UTF-8 message, 'a'
// ascii85 for any other bytes), the publisher's sequence number, topic and
// instance, each ended by a newline, then the message.
func encodeEvent(seq int, e Event) string {
	kind, body := "r", string(e.Msg)
	if !utf8.Valid(e.Msg) || bytes.IndexByte(e.Msg, 0) >= 0 {
		buf := make([]byte, ascii85.MaxEncodedLen(len(e.Msg)))
		kind, body = "a", string(buf[:ascii85.Encode(buf, e.Msg)])
	}
	return kind + strconv.Itoa(seq) + "\n" + e.Topic + "\n" + e.Instance + "\n" + body
}

func decodeEvent(payload string) (Event, bool) {
	parts := strings.SplitN(payload, "\n", 4)
	if len(parts) != 4 || parts[0] == "" {
		return Event{}, false
	}
	e := Event{Topic: parts[1], Instance: parts[2], Msg: []byte(parts[3])}
	if parts[0][0] == 'a' {
		buf := make([]byte, 4*len(parts[3])) // "z" stands for 4 bytes
		n, _, err := ascii85.Decode(buf, []byte(parts[3]), true)
		if err != nil {
			return Event{}, false
		}
		e.Msg = buf[:n]
	}
	return e, true
}
