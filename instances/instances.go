// Package instances keeps a record of each running instance of one Warden
// in the store it shares, so that a person can see who serves: each instance
// writes its record every few seconds (a heartbeat) and deletes it when it
// stops cleanly. One killed leaves its record behind, shown as gone at once
// (the store says it is no longer alive) or, hung, once it has not been
// seen for GoneAfter.
package instances

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"github.com/wardenmcp/warden/store"
)

// The heartbeat's period, and how long unseen makes an instance gone
// (a few missed beats, so that one slow commit does not count).
const (
	Every     = 5 * time.Second
	GoneAfter = 30 * time.Second
)

const bucket = "instances"

// Instance is one instance's record, as GET /v1/instances answers it.
type Instance struct {
	ID       string    `json:"id"`     // its stable name (host and port, or --instance)
	Run      string    `json:"run"`    // a random name for this run of it, so that Stop leaves a later run's record
	Listen   string    `json:"listen"` // the address it serves on
	Version  string    `json:"version"`
	Started  time.Time `json:"started"`
	LastSeen time.Time `json:"last_seen"`
	// Gone: no longer alive in the store (Tx.Alive: it died or lost the
	// database), or not seen for GoneAfter (hung); its record stays until
	// an instance of that ID starts again.
	Gone bool `json:"gone"`
}

// Heartbeat writes one instance's record until Stop.
type Heartbeat struct {
	st   store.Store
	rec  Instance
	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// Start writes self's record (Run, Started and LastSeen are set here) and
// keeps it fresh every Every. A beat that fails (the store unreachable) is
// retried at the next.
func Start(ctx context.Context, st store.Store, self Instance) (*Heartbeat, error) {
	self.Run, self.Started, self.Gone = strings.ToLower(rand.Text()[:10]), time.Now().UTC().Round(0), false
	h := &Heartbeat{st: st, rec: self, stop: make(chan struct{}), done: make(chan struct{})}
	if err := h.beat(ctx); err != nil {
		return nil, err
	}
	go h.run()
	return h, nil
}

func (h *Heartbeat) beat(ctx context.Context) error {
	h.rec.LastSeen = time.Now().UTC().Round(0)
	v, err := json.Marshal(h.rec)
	if err != nil {
		return err
	}
	return h.st.Update(ctx, func(tx store.Tx) error { return tx.Put(bucket, []byte(h.rec.ID), v) })
}

func (h *Heartbeat) run() {
	defer close(h.done)
	t := time.NewTicker(Every)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
			_ = h.beat(context.Background())
		}
	}
}

// Stop ends the heartbeat and deletes the record, unless another run of the
// same ID has written it since.
func (h *Heartbeat) Stop(ctx context.Context) error {
	h.once.Do(func() { close(h.stop) })
	<-h.done
	return h.st.Update(ctx, func(tx store.Tx) error {
		v, err := tx.Get(bucket, []byte(h.rec.ID))
		if v == nil || err != nil {
			return err
		}
		var rec Instance
		if json.Unmarshal(v, &rec) == nil && rec.Run != h.rec.Run {
			return nil
		}
		return tx.Delete(bucket, []byte(h.rec.ID))
	})
}

// List answers the instances recorded in st, by ID, each marked gone when
// the store does not know it alive or it was not seen for GoneAfter before
// now. A record that cannot be read is listed by its ID alone, gone.
func List(ctx context.Context, st store.Store, now time.Time) ([]Instance, error) {
	var out []Instance
	err := st.View(ctx, func(tx store.Tx) error {
		recs, alive, err := recorded(tx)
		for i := range recs {
			recs[i].Gone = !alive[i] || now.Sub(recs[i].LastSeen) > GoneAfter
		}
		out = recs
		return err
	})
	return out, err
}

// Live answers the instances recorded in st that run now: those whose
// process holds its liveness lock in the store (Tx.Alive), hung or not,
// so that a command that must not run beside them (rotating the key,
// migrating into the store) can name them.
func Live(ctx context.Context, st store.Store) ([]Instance, error) {
	var live []Instance
	err := st.View(ctx, func(tx store.Tx) error {
		recs, alive, err := recorded(tx)
		live = nil
		for i := range recs {
			if alive[i] {
				live = append(live, recs[i])
			}
		}
		return err
	})
	return live, err
}

// recorded reads every instance's record, by ID (one that cannot be read
// has its ID alone), and whether the store knows each alive (Tx.Alive).
func recorded(tx store.Tx) ([]Instance, []bool, error) {
	recs := []Instance{}
	err := tx.Scan(bucket, nil, false, func(k, v []byte) error {
		var rec Instance
		if json.Unmarshal(v, &rec) != nil {
			rec = Instance{}
		}
		rec.ID = string(k)
		recs = append(recs, rec)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	alive := make([]bool, len(recs))
	for i, rec := range recs {
		if alive[i], err = tx.Alive(rec.ID); err != nil {
			return nil, nil, err
		}
	}
	return recs, alive, nil
}
