// Package decisions is the record of what operators decided: who, on which
// instance, when, and what (admit, approve or block tools, quarantine,
// clear a latch). Each entry is written by Record in the transaction that
// makes the decision, so a decision and its record commit together: none
// stands unrecorded, none is recorded that did not happen.
//
// Keys are the time (big-endian Unix nanoseconds), then 8 bytes of the
// instance's name hashed: in time order, and two instances' keys never
// collide. The log keeps the last 10,000.
package decisions

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	"github.com/wardenmcp/warden/store"
)

// Actions.
const (
	Admit      = "admit"      // a quarantined server let in, its pending tools approved
	Approve    = "approve"    // tools approved
	Block      = "block"      // tools blocked
	Quarantine = "quarantine" // a server quarantined again
	Clear      = "clear"      // a server's write latch cleared
)

// Decision is one decision of an operator.
type Decision struct {
	At       time.Time `json:"at"`
	Operator string    `json:"operator"` // callers.Operator's Name: "local", or the person
	Instance string    `json:"instance,omitempty"`
	Action   string    `json:"action"`
	Server   string    `json:"server"`
	Approved []string  `json:"approved,omitempty"` // the tools it approved
	Blocked  []string  `json:"blocked,omitempty"`  // the tools it blocked
	Latches  int       `json:"latches,omitempty"`  // the calls in doubt it cleared
}

const bucket = "decisions"

// maxEntries is how many decisions the log keeps.
var maxEntries = 10000

// Record writes d in tx, stamped with tx's time and the store's instance
// unless set, and drops the oldest entries past the log's bound.
func Record(tx store.Tx, st store.Store, d Decision) error {
	if d.At.IsZero() {
		d.At = time.Now()
	}
	if d.Instance == "" {
		d.Instance = st.Instance()
	}
	v, err := json.Marshal(d)
	if err != nil {
		return err
	}
	key := binary.BigEndian.AppendUint64(nil, uint64(d.At.UnixNano()))
	sum := sha256.Sum256([]byte(d.Instance))
	if err := tx.Put(bucket, append(key, sum[:8]...), v); err != nil {
		return err
	}
	n, err := tx.Count(bucket)
	if err != nil || n <= maxEntries {
		return err
	}
	var old [][]byte
	err = tx.Scan(bucket, nil, false, func(k, _ []byte) error {
		old = append(old, append([]byte(nil), k...))
		if len(old) == n-maxEntries {
			return store.ErrStop
		}
		return nil
	})
	for _, k := range old {
		if err == nil {
			err = tx.Delete(bucket, k)
		}
	}
	return err
}

// List answers the latest decisions, newest first: at most limit, only
// server's when server is set.
func List(ctx context.Context, st store.Store, server string, limit int) ([]Decision, error) {
	out := []Decision{}
	err := st.View(ctx, func(tx store.Tx) error {
		return tx.Scan(bucket, nil, true, func(k, v []byte) error {
			var d Decision
			if err := json.Unmarshal(v, &d); err != nil {
				return fmt.Errorf("decisions: entry %x: %w", k, err)
			}
			if server == "" || d.Server == server {
				out = append(out, d)
			}
			if len(out) == limit {
				return store.ErrStop
			}
			return nil
		})
	})
	return out, err
}
