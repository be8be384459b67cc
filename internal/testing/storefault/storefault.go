// Package storefault is a store that a test can cut off, as a database
// goes down: while down, View, Update and Batch fail with
// store.ErrUnavailable and do nothing.
package storefault

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/wardenmcp/warden/store"
)

// Store wraps a store.Store; the zero down state is up.
type Store struct {
	store.Store
	down atomic.Bool
}

// Wrap returns st, to be cut off with Down.
func Wrap(st store.Store) *Store { return &Store{Store: st} }

// Down cuts the store off (true) or brings it back (false).
func (s *Store) Down(down bool) { s.down.Store(down) }

func (s *Store) err() error {
	if s.down.Load() {
		return fmt.Errorf("storefault: cut off: %w", store.ErrUnavailable)
	}
	return nil
}

func (s *Store) View(ctx context.Context, fn func(store.Tx) error) error {
	if err := s.err(); err != nil {
		return err
	}
	return s.Store.View(ctx, fn)
}

func (s *Store) Update(ctx context.Context, fn func(store.Tx) error) error {
	if err := s.err(); err != nil {
		return err
	}
	return s.Store.Update(ctx, fn)
}

func (s *Store) Batch(ctx context.Context, fn func(store.Tx) error) error {
	if err := s.err(); err != nil {
		return err
	}
	return s.Store.Batch(ctx, fn)
}
