package approval

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.etcd.io/bbolt"
)

// Layout: bucketServers maps server name to its serverMeta (JSON);
// bucketTools holds one nested bucket per server mapping tool name to its
// storedRecord (JSON). Other packages share the file, hence the prefix.
var (
	bucketServers = []byte("approval.servers")
	bucketTools   = []byte("approval.tools")
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
	FirstSeen    time.Time       `json:"first_seen,omitzero"`
	LastSeen     time.Time       `json:"last_seen,omitzero"`
	HeldBack     bool            `json:"held_back,omitempty"`
	HeldBackAt   time.Time       `json:"held_back_at,omitzero"`
}

// encodeRecord writes rec as storedRecord JSON by hand: encoding/json would
// re-validate and compact the definitions, which is most of a first pass's
// cost. Current and Approved are canonical JSON made by this package.
func encodeRecord(rec *ToolRecord) []byte {
	b := make([]byte, 0, 256+len(rec.Current))
	b = appendString(append(b, `{"status":`...), string(rec.Status))
	b = append(b, `,"present":`...)
	if rec.Present {
		b = append(b, "true"...)
	} else {
		b = append(b, "false"...)
	}
	if rec.ApprovedHash != "" {
		b = appendString(append(b, `,"approved_hash":`...), rec.ApprovedHash)
	}
	b = appendString(append(b, `,"current_hash":`...), rec.CurrentHash)
	if len(rec.Current) > 0 {
		b = append(append(b, `,"current":`...), rec.Current...)
	}
	if len(rec.Approved) > 0 && rec.ApprovedHash != rec.CurrentHash {
		b = append(append(b, `,"approved":`...), rec.Approved...)
	}
	if rec.ApprovedBy != "" {
		b = appendString(append(b, `,"approved_by":`...), rec.ApprovedBy)
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
	return append(b, '}')
}

// decodeRecord is encodeRecord's inverse.
func decodeRecord(server, name string, v []byte) (*ToolRecord, error) {
	var s storedRecord
	if err := json.Unmarshal(v, &s); err != nil {
		return nil, err
	}
	if !s.Status.valid() {
		return nil, fmt.Errorf("unknown status %q", s.Status)
	}
	rec := &ToolRecord{Server: server, Name: name, Status: s.Status, Present: s.Present,
		ApprovedHash: s.ApprovedHash, CurrentHash: s.CurrentHash, Current: s.Current, Approved: s.Approved,
		ApprovedBy: s.ApprovedBy, ApprovedAt: s.ApprovedAt, FirstSeen: s.FirstSeen, LastSeen: s.LastSeen, HeldBack: s.HeldBack, HeldBackAt: s.HeldBackAt}
	if rec.Approved == nil && rec.ApprovedHash != "" && rec.ApprovedHash == rec.CurrentHash {
		rec.Approved = rec.Current
	}
	if len(rec.Current) > 0 {
		var d struct {
			Annotations *mcp.ToolAnnotations `json:"annotations"`
		}
		if err := json.NewDecoder(bytes.NewReader(rec.Current)).Decode(&d); err != nil {
			return nil, fmt.Errorf("definition: %w", err)
		}
		rec.Annotations = d.Annotations
	}
	return rec, nil
}

// load creates the buckets if needed and reads every server and record.
func (r *Registry) load() (map[string]serverMeta, map[string]map[string]*ToolRecord, error) {
	err := r.db.Update(func(tx *bbolt.Tx) error {
		for _, b := range [][]byte{bucketServers, bucketTools} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return fmt.Errorf("approval: create bucket %s: %w", b, err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	metas := map[string]serverMeta{}
	tools := map[string]map[string]*ToolRecord{}
	err = r.db.View(func(tx *bbolt.Tx) error {
		err := tx.Bucket(bucketServers).ForEach(func(k, v []byte) error {
			var m serverMeta
			if err := json.Unmarshal(v, &m); err != nil {
				return fmt.Errorf("approval: server record %q is unreadable (%v); restore the state dir from a backup or remove the server's record", k, err)
			}
			metas[string(k)] = m
			return nil
		})
		if err != nil {
			return err
		}
		tb := tx.Bucket(bucketTools)
		return tb.ForEachBucket(func(srv []byte) error {
			recs := map[string]*ToolRecord{}
			tools[string(srv)] = recs
			return tb.Bucket(srv).ForEach(func(k, v []byte) error {
				rec, err := decodeRecord(string(srv), string(k), v)
				if err != nil {
					return fmt.Errorf("approval: tool record %q/%q is unreadable (%v); restore the state dir from a backup or remove the record", srv, k, err)
				}
				recs[string(k)] = rec
				return nil
			})
		})
	})
	if err != nil {
		return nil, nil, err
	}
	return metas, tools, nil
}

// store writes a server's meta (if non-nil) and records in one transaction.
// Encoding happens before the transaction to keep the writer lock short.
// A discovery pass's transaction may be shared with those of other
// servers' passes made at the same moment (bbolt's Batch: at most 10 ms
// later), one sync to disk for all: at start every server's first listing
// is written at about the same time, and one commit after another held the
// last ones back (1.7% of the start with 28 servers, in two runs of ten
// starts each). A person's decision is written at once.
func (r *Registry) store(server string, meta *serverMeta, recs []*ToolRecord, discovery bool) error {
	var metaJSON []byte
	if meta != nil {
		b, err := json.Marshal(meta)
		if err != nil {
			return fmt.Errorf("approval: encode server %q: %w", server, err)
		}
		metaJSON = b
	}
	// Keys in order with fuller pages: a first pass of a large server writes
	// about half the pages bbolt's default split would.
	recs = slices.Clone(recs)
	slices.SortFunc(recs, func(a, b *ToolRecord) int { return strings.Compare(a.Name, b.Name) })
	vals := make([][]byte, len(recs))
	for i, rec := range recs {
		vals[i] = encodeRecord(rec)
	}
	key := []byte(server)
	update := r.db.Update
	if discovery {
		update = r.db.Batch // which may run the function again: it only puts
	}
	err := update(func(tx *bbolt.Tx) error {
		if metaJSON != nil {
			if err := r.put("servers", tx.Bucket(bucketServers), key, metaJSON); err != nil {
				return err
			}
		}
		if len(recs) == 0 {
			return nil
		}
		tb, err := tx.Bucket(bucketTools).CreateBucketIfNotExists(key)
		if err != nil {
			return err
		}
		tb.FillPercent = 0.9
		for i, rec := range recs {
			if err := r.put("tools/"+server, tb, []byte(rec.Name), vals[i]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("approval: write server %q: %w", server, err)
	}
	return nil
}

// storeMetas writes the servers' metas (those not nil) in one transaction.
func (r *Registry) storeMetas(names []string, metas []*serverMeta) error {
	if !slices.ContainsFunc(metas, func(m *serverMeta) bool { return m != nil }) {
		return nil
	}
	err := r.db.Update(func(tx *bbolt.Tx) error {
		for i, m := range metas {
			if m == nil {
				continue
			}
			b, err := json.Marshal(m)
			if err != nil {
				return fmt.Errorf("encode server %q: %w", names[i], err)
			}
			if err := r.put("servers", tx.Bucket(bucketServers), []byte(names[i]), b); err != nil {
				return fmt.Errorf("write server %q: %w", names[i], err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("approval: %w", err)
	}
	return nil
}

func (r *Registry) put(label string, b *bbolt.Bucket, k, v []byte) error {
	if h := r.testHookPut; h != nil {
		h(label, string(k))
	}
	return b.Put(k, v)
}
