package approval

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/wardenmcp/warden/decisions"
	"github.com/wardenmcp/warden/guardrails"
	"github.com/wardenmcp/warden/internal/canon"
	"github.com/wardenmcp/warden/store"
)

// Layout: bucketServers maps server name to its serverMeta (JSON);
// bucketTools holds one child bucket per server ("approval.tools/<server>")
// mapping tool name to its storedRecord (JSON). Other packages share the
// store, hence the prefix. Server names never contain "/" (config.Validate).
const (
	bucketServers = "approval.servers"
	bucketTools   = "approval.tools"
	// topic announces the name of a server whose records an Update changed.
	topic = "approval"
	// lockPrefix + server is the store lock of one server's records.
	lockPrefix = "approval/"
)

// storedRecord is a ToolRecord as stored: server and name are the bucket and
// key, annotations are read back from Current, and Approved is left out while
// it equals Current (approved tools, the common case).
type storedRecord struct {
	Status       Status          `json:"status"`
	Present      bool            `json:"present"`
	ApprovedHash string          `json:"approved_hash,omitempty"`
	CurrentHash  string          `json:"current_hash"`
	Current      json.RawMessage `json:"current,omitempty"`
	Approved     json.RawMessage `json:"approved,omitempty"`
	ApprovedBy   string          `json:"approved_by,omitempty"`
	ApprovedAt   time.Time       `json:"approved_at,omitzero"`
	DecidedBy    string          `json:"decided_by,omitempty"`
	FirstSeen    time.Time       `json:"first_seen,omitzero"`
	LastSeen     time.Time       `json:"last_seen,omitzero"`
	HeldBack     bool            `json:"held_back,omitempty"`
	HeldBackAt   time.Time       `json:"held_back_at,omitzero"`
	// Findings is nil in records written before findings were stored.
	Findings *[]guardrails.Finding `json:"findings,omitempty"`
	Reason   string                `json:"reason,omitempty"`
}

// encodeRecord writes rec as storedRecord JSON by hand: encoding/json would
// re-validate and compact the definitions, which is most of a first pass's
// cost. Current and Approved are canonical JSON made by this package.
func encodeRecord(rec *ToolRecord) []byte {
	b := make([]byte, 0, 256+len(rec.Current))
	b = canon.AppendString(append(b, `{"status":`...), string(rec.Status))
	b = append(b, `,"present":`...)
	if rec.Present {
		b = append(b, "true"...)
	} else {
		b = append(b, "false"...)
	}
	if rec.ApprovedHash != "" {
		b = canon.AppendString(append(b, `,"approved_hash":`...), rec.ApprovedHash)
	}
	b = canon.AppendString(append(b, `,"current_hash":`...), rec.CurrentHash)
	if len(rec.Current) > 0 {
		b = append(append(b, `,"current":`...), rec.Current...)
	}
	if len(rec.Approved) > 0 && rec.ApprovedHash != rec.CurrentHash {
		b = append(append(b, `,"approved":`...), rec.Approved...)
	}
	if rec.ApprovedBy != "" {
		b = canon.AppendString(append(b, `,"approved_by":`...), rec.ApprovedBy)
	}
	if rec.DecidedBy != "" {
		b = canon.AppendString(append(b, `,"decided_by":`...), rec.DecidedBy)
	}
	for _, f := range []struct {
		key string
		t   time.Time
	}{{"approved_at", rec.ApprovedAt}, {"first_seen", rec.FirstSeen}, {"last_seen", rec.LastSeen}, {"held_back_at", rec.HeldBackAt}} {
		if !f.t.IsZero() {
			b = append(append(append(b, `,"`...), f.key...), `":"`...)
			b = append(f.t.AppendFormat(b, time.RFC3339Nano), '"')
		}
	}
	if rec.HeldBack {
		b = append(b, `,"held_back":true`...)
	}
	if rec.Findings != nil {
		fs, _ := json.Marshal(rec.Findings) // strings only: cannot fail
		b = append(append(b, `,"findings":`...), fs...)
	}
	if rec.Reason != "" {
		b = canon.AppendString(append(b, `,"reason":`...), rec.Reason)
	}
	return append(b, '}')
}

// decodeRecord is encodeRecord's inverse. A record written before findings
// were stored takes prior's (the record in memory) when the definitions are
// the same, else is scanned now.
func decodeRecord(server, name string, v []byte, prior *ToolRecord) (*ToolRecord, error) {
	var s storedRecord
	if err := json.Unmarshal(v, &s); err != nil {
		return nil, err
	}
	if !s.Status.valid() {
		return nil, fmt.Errorf("unknown status %q", s.Status)
	}
	rec := &ToolRecord{Server: server, Name: name, Status: s.Status, Present: s.Present,
		ApprovedHash: s.ApprovedHash, CurrentHash: s.CurrentHash, Current: s.Current, Approved: s.Approved,
		ApprovedBy: s.ApprovedBy, ApprovedAt: s.ApprovedAt, DecidedBy: s.DecidedBy, FirstSeen: s.FirstSeen, LastSeen: s.LastSeen, HeldBack: s.HeldBack, HeldBackAt: s.HeldBackAt,
		Reason: s.Reason}
	if rec.Approved == nil && rec.ApprovedHash != "" && rec.ApprovedHash == rec.CurrentHash {
		rec.Approved = rec.Current
	}
	switch {
	case s.Findings != nil:
		rec.Findings = *s.Findings
	case prior != nil && prior.Findings != nil && prior.CurrentHash == rec.CurrentHash && prior.ApprovedHash == rec.ApprovedHash:
		rec.Findings = prior.Findings
	default:
		rec.Findings = findingsOf(rec, nil)
	}
	// Current is canonical JSON made by this package: only its annotations
	// are decoded (for a server's hundreds of records at every start); the
	// whole of it if it were not, since the annotations class its calls.
	a, ok := canon.Raw(rec.Current).Member("annotations")
	if !ok && bytes.Contains(rec.Current, []byte(`"annotations"`)) {
		var d struct {
			Annotations json.RawMessage `json:"annotations"`
		}
		if err := json.Unmarshal(rec.Current, &d); err != nil {
			return nil, fmt.Errorf("definition: %w", err)
		}
		a = canon.Raw(d.Annotations)
	}
	if len(a) > 0 {
		if err := json.Unmarshal(a, &rec.Annotations); err != nil {
			return nil, fmt.Errorf("definition: annotations: %w", err)
		}
	}
	return rec, nil
}

// reload reads server s's meta and records from tx and installs those that
// differ from memory, as a change with cause "sync" (nil: none differ). A
// server with records but no server record was never admitted: it reads as
// quarantined (fail closed). Caller holds s.mu.
func (r *Registry) reload(tx store.Tx, s *server) (*Change, error) {
	var meta *serverMeta
	v, err := tx.Get(bucketServers, []byte(s.name))
	if err != nil {
		return nil, err
	}
	if v != nil {
		cur, _ := json.Marshal(s.meta)
		if !s.hasMeta || !bytes.Equal(cur, v) {
			var m serverMeta
			if err := json.Unmarshal(v, &m); err != nil {
				return nil, fmt.Errorf("approval: server record %q is unreadable (%v); restore the store (the state dir, or the database the \"store\" setting names) from a backup, or remove the server's record", s.name, err)
			}
			meta = &m
		}
	}
	var recs []*ToolRecord
	err = tx.Scan(bucketTools+"/"+s.name, nil, false, func(k, v []byte) error {
		old := s.tools[string(k)]
		var oldJSON []byte
		if old != nil {
			if oldJSON = encodeRecord(old); bytes.Equal(oldJSON, v) {
				return nil
			}
		}
		rec, err := decodeRecord(s.name, string(k), v, old)
		if err != nil {
			return fmt.Errorf("approval: tool record %q/%q is unreadable (%v); restore the store (the state dir, or the database the \"store\" setting names) from a backup, or remove the record", s.name, k, err)
		}
		holdInvalid(rec) // in memory; written with the record's next change
		if old == nil || !bytes.Equal(oldJSON, encodeRecord(rec)) {
			recs = append(recs, rec)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if v == nil && !s.hasMeta && len(recs) > 0 {
		meta = &serverMeta{Quarantined: true, QuarantinedBy: QuarantinedUntrusted}
	}
	if meta == nil && len(recs) == 0 {
		return nil, nil
	}
	return r.install(s, meta, recs, "sync"), nil
}

// write puts c for server in tx and announces it on topic. Records go in
// name order.
func (r *Registry) write(tx store.Tx, server string, c change) error {
	if c.empty() {
		return nil
	}
	if c.meta != nil {
		b, err := json.Marshal(c.meta)
		if err != nil {
			return fmt.Errorf("encode server %q: %w", server, err)
		}
		if err := r.put(tx, bucketServers, server, b); err != nil {
			return err
		}
	}
	recs := slices.Clone(c.recs)
	slices.SortFunc(recs, func(a, b *ToolRecord) int { return strings.Compare(a.Name, b.Name) })
	for _, rec := range recs {
		if err := r.put(tx, bucketTools+"/"+server, rec.Name, encodeRecord(rec)); err != nil {
			return err
		}
	}
	if c.decision != nil {
		if err := decisions.Record(tx, r.st, *c.decision); err != nil {
			return err
		}
	}
	return tx.Publish(topic, []byte(server))
}

func (r *Registry) put(tx store.Tx, bucket, key string, v []byte) error {
	if h := r.testHookPut; h != nil {
		h(bucket, key)
	}
	return tx.Put(bucket, []byte(key), v)
}

// errNotDecided: update has not decided on the records as the store has
// them yet.
var errNotDecided = errors.New("not decided")

// refusal carries decide's error out of the transaction, apart from the
// store's.
type refusal struct{ err error }

func (r refusal) Error() string { return r.err.Error() }

// change is what one decision writes to one server: its meta (nil: as it
// is) and the records that change.
type change struct {
	meta *serverMeta
	recs []*ToolRecord
	// decision, if set, is the operator's decision the change makes,
	// recorded with it.
	decision *decisions.Decision
}

func (c change) empty() bool { return c.meta == nil && len(c.recs) == 0 }

// update is every read-modify-write of servers' records (ss in name order,
// each s.mu held by the caller). decide reads their state in memory and says
// what to write to each, in order; it may run more than once.
//
// For a discovery pass or a config load, decide runs first against memory;
// one that writes nothing ends there: no transaction (most passes; memory
// that missed another instance's change is brought up to date by Watch).
// Otherwise, in one transaction, each server's store lock is taken and its records reloaded
// (another instance may have changed them; those changes are returned
// first, cause "sync"), decide runs again if the reload changed anything,
// and its writes are put and announced on topic. Once committed they are installed. A discovery pass
// may share its commit with other servers' passes made at the same moment
// (Batch): at start every server's first listing is written at about the
// same time, and one commit after another held the last ones back.
//
// decide's error is returned as it is; the store's wrapped (errors.Is
// finds store.ErrUnavailable). Either way nothing was written.
func (r *Registry) update(ss []*server, cause string, decide func() ([]change, error)) ([]*Change, error) {
	var cs []change
	decideErr := errNotDecided // an operator's decision is made on what the store has
	if cause == "discovery" || cause == "config" {
		if cs, decideErr = decide(); decideErr == nil && !slices.ContainsFunc(cs, func(c change) bool { return !c.empty() }) {
			return nil, nil
		}
	}
	run := r.st.Update
	if cause == "discovery" {
		run = r.st.Batch
	}
	var synced []*Change
	err := run(context.Background(), func(tx store.Tx) error {
		for _, s := range ss {
			if err := tx.Lock(lockPrefix + s.name); err != nil {
				return err
			}
			ch, err := r.reload(tx, s)
			if err != nil {
				return err
			}
			if ch != nil {
				synced = append(synced, ch)
			}
		}
		if len(synced) > 0 || decideErr != nil { // else memory was the store: cs stands
			if cs, decideErr = decide(); decideErr != nil {
				return refusal{decideErr}
			}
		}
		for _, s := range ss {
			if h := r.testHookAfterRead; h != nil {
				h(s.name)
			}
		}
		for i, s := range ss {
			if err := r.write(tx, s.name, cs[i]); err != nil {
				return err
			}
		}
		return nil
	})
	if ref := (refusal{}); errors.As(err, &ref) {
		return synced, ref.err
	}
	if err != nil {
		names := make([]string, len(ss))
		for i, s := range ss {
			names[i] = s.name
		}
		return synced, fmt.Errorf("approval: write %s: %w", strings.Join(names, ", "), err)
	}
	out := synced
	for i, s := range ss {
		if !cs[i].empty() {
			out = append(out, r.install(s, cs[i].meta, cs[i].recs, cause))
		}
	}
	return out, nil
}

// commit is update for one server.
func (r *Registry) commit(s *server, cause string, decide func() (change, error)) ([]*Change, error) {
	return r.update([]*server{s}, cause, func() ([]change, error) {
		c, err := decide()
		return []change{c}, err
	})
}

// remote reloads what another instance changed: the server named in e, or
// every server on a Resync, and tells the observers as a local change would.
func (r *Registry) remote(e store.Event) {
	if e.Mine(r.st) {
		return
	}
	names := []string{string(e.Msg)}
	if !e.Resync && len(e.Msg) == 0 {
		return
	}
	if e.Resync {
		names = names[:0]
		err := r.st.View(context.Background(), func(tx store.Tx) error {
			var err error
			names, err = storedServers(tx)
			return err
		})
		if err != nil {
			return // the store is unreachable again: its next Resync retries
		}
		for name := range *r.servers.Load() {
			if !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
	}
	for _, name := range names {
		s := r.serverFor(name)
		s.lock()
		var ch *Change
		_ = r.st.View(context.Background(), func(tx store.Tx) error { // on failure memory stays as it was
			var err error
			ch, err = r.reload(tx, s)
			return err
		})
		s.unlock()
		r.notify(ch)
	}
}

// storedServers lists the servers the store has a record or records of.
func storedServers(tx store.Tx) ([]string, error) {
	var names []string
	err := tx.Scan(bucketServers, nil, false, func(k, _ []byte) error {
		names = append(names, string(k))
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = tx.Buckets(bucketTools, func(name string) error {
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
		return nil
	})
	return names, err
}
