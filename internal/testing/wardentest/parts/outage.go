package parts

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/wardenmcp/warden/store"
)

// outage is a store that can be cut off, as a database goes down: while
// down, View, Update and Batch fail with store.ErrUnavailable and do
// nothing.
type outage struct {
	store.Store
	down atomic.Bool
}

func (o *outage) err() error {
	if o.down.Load() {
		return fmt.Errorf("test outage: %w", store.ErrUnavailable)
	}
	return nil
}

func (o *outage) View(ctx context.Context, fn func(store.Tx) error) error {
	if err := o.err(); err != nil {
		return err
	}
	return o.Store.View(ctx, fn)
}

func (o *outage) Update(ctx context.Context, fn func(store.Tx) error) error {
	if err := o.err(); err != nil {
		return err
	}
	return o.Store.Update(ctx, fn)
}

func (o *outage) Batch(ctx context.Context, fn func(store.Tx) error) error {
	if err := o.err(); err != nil {
		return err
	}
	return o.Store.Batch(ctx, fn)
}

// StoreDown cuts the store off (down) or brings it back, for the parts
// already on store.Store.
func (p *Parts) StoreDown(down bool) { p.outage.down.Store(down) }
