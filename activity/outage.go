package activity

import (
	"encoding/json"
	"fmt"
	"time"
)

// DefaultHeldBytes bounds the entries the writer keeps while the store is
// unreachable, counting their stored keys and values. An entry is a few
// hundred bytes (its Error is cut to MaxError), so 4 MiB keeps roughly as
// many entries as the log's default retention (DefaultMaxEntries), which is
// also the entry bound: more would be deleted by retention when written.
const DefaultHeldBytes = 4 << 20

// record is an entry as it is stored. Its key and value are fixed when the
// writer first takes the entry, so writing it again after a transaction
// whose commit may or may not have happened stores the same row once.
type record struct{ key, value []byte }

func (r record) size() int { return len(r.key) + len(r.value) }

// held is what the writer keeps while the store is unreachable: the records
// no transaction could store, oldest first, and how many older ones the
// bounds made it drop. Writer goroutine only.
type held struct {
	recs       []record
	bytes      int
	maxBytes   int
	maxEntries int
	// lost counts the entries dropped since the last stored marker; the
	// marker takes the first one's key, so it sits where the gap starts.
	lost    int
	lostKey []byte
	lastAt  time.Time // the newest lost entry's time
}

// keep adds recs after those already held, then drops the oldest beyond
// the bounds.
func (h *held) keep(recs []record) int {
	h.recs = append(h.recs, recs...)
	for _, r := range recs {
		h.bytes += r.size()
	}
	dropped := 0
	for len(h.recs) > 0 && (h.bytes > h.maxBytes || len(h.recs) > h.maxEntries) {
		r := h.recs[0]
		h.recs[0] = record{}
		h.recs = h.recs[1:]
		h.bytes -= r.size()
		if h.lost == 0 {
			h.lostKey = r.key
		}
		h.lost++
		h.lastAt = keyTime(r.key)
		dropped++
	}
	return dropped
}

// pending reports whether anything waits for the store.
func (h *held) pending() bool { return len(h.recs) > 0 || h.lost > 0 }

// clear forgets what is held: it is stored.
func (h *held) clear() { *h = held{maxBytes: h.maxBytes, maxEntries: h.maxEntries} }

// with answers what one transaction must store: the held records, the
// marker of those lost, then recs.
func (h *held) with(recs []record, instance string) []record {
	if !h.pending() {
		return recs
	}
	all := make([]record, 0, len(h.recs)+1+len(recs))
	all = append(all, h.recs...)
	if h.lost > 0 {
		all = append(all, h.marker(instance))
	}
	return append(all, recs...)
}

// marker is the entry that says how many entries the bounds dropped.
func (h *held) marker(instance string) record {
	e := Entry{
		At: keyTime(h.lostKey), Outcome: OutcomeLost, Code: "STORE_UNAVAILABLE", Instance: instance,
		Error: fmt.Sprintf("%d entries of the calls served from this entry's time to %s were lost: the store was unreachable, "+
			"and an instance keeps at most %d entries (%d bytes) until it is back",
			h.lost, h.lastAt.UTC().Format(time.RFC3339Nano), h.maxEntries, h.maxBytes),
	}
	v, _ := json.Marshal(&e) // an Entry always marshals
	return record{key: h.lostKey, value: v}
}
