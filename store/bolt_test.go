package store_test

import (
	"context"
	"path/filepath"
	"testing"

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
