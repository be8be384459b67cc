package store_test

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/wardenmcp/warden/store"
	"github.com/wardenmcp/warden/store/storetest"
)

func TestBolt(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := store.Open(context.Background(), store.Options{Path: filepath.Join(t.TempDir(), "warden.db"), Key: storetest.Key})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// A bucket a transaction only appends to (a new server's tool records,
// written in key order) has its pages filled to 90%, not bbolt's half:
// about half the pages to write and sync. Keys put out of order keep
// bbolt's default, as later inserts among them would split full pages.
func TestBoltFillsAppendedBuckets(t *testing.T) {
	path := filepath.Join(t.TempDir(), "warden.db")
	s, err := store.Open(context.Background(), store.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	value := bytes.Repeat([]byte("v"), 700)
	err = s.Update(context.Background(), func(tx store.Tx) error {
		for i := range 1000 {
			if err := tx.Put("tools/ordered", fmt.Appendf(nil, "tool_%04d", i), value); err != nil {
				return err
			}
			if err := tx.Put("tools/reversed", fmt.Appendf(nil, "tool_%04d", 999-i), value); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		fill := func(name string) float64 {
			st := tx.Bucket([]byte("tools")).Bucket([]byte(name)).Stats()
			return float64(st.LeafInuse) / float64(st.LeafAlloc)
		}
		if f := fill("ordered"); f < 0.8 {
			t.Errorf("the bucket written in key order is %.0f%% full, want about 90%%", 100*f)
		}
		if f := fill("reversed"); f > 0.7 {
			t.Errorf("the bucket written out of order is %.0f%% full, want bbolt's default (pages split in half)", 100*f)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
