package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
)

// Moving a store (warden store migrate) and changing its key (warden store
// rotate-key). Both go through the Tx interface, so they work between any
// two implementations; secrets are opened with the source's keys and sealed
// with the destination's, so a secret kept unsealed in an embedded store
// is sealed on its way into a shared one.

// record is one key of one bucket.
type record struct {
	bucket string
	key    []byte
	value  []byte // a secret's opened value
	raw    []byte // as stored
	secret bool
}

// walk returns every record of tx, bucket by bucket, nested buckets after
// their parent's keys. (Nothing else is asked of tx while it lists or
// scans: a PostgreSQL connection serves one query at a time.)
func walk(tx Tx, seal *sealer) ([]record, error) {
	var out []record
	var visit func(bucket string) error
	visit = func(bucket string) error {
		err := tx.Scan(bucket, nil, false, func(k, v []byte) error {
			r := record{bucket: bucket, key: bytes.Clone(k), raw: bytes.Clone(v), secret: secret(v)}
			r.value = r.raw
			if r.secret {
				var err error
				if r.value, err = seal.open(bucket, k, v); err != nil {
					return err
				}
			}
			out = append(out, r)
			return nil
		})
		if err != nil {
			return err
		}
		return eachBucket(tx, bucket, func(child string) error { return visit(bucket + "/" + child) })
	}
	err := eachBucket(tx, "", visit)
	return out, err
}

// eachBucket calls fn with each child of parent, listed first.
func eachBucket(tx Tx, parent string, fn func(string) error) error {
	var names []string
	if err := tx.Buckets(parent, func(name string) error { names = append(names, name); return nil }); err != nil {
		return err
	}
	for _, name := range names {
		if err := fn(name); err != nil {
			return err
		}
	}
	return nil
}

// records reads every record of s.
func records(ctx context.Context, s Store) ([]record, error) {
	var recs []record
	err := s.View(ctx, func(tx Tx) (err error) {
		recs, err = walk(tx, sealerOf(s))
		return err
	})
	return recs, err
}

// sealerOf returns the sealer behind s (every Store of this package has one).
func sealerOf(s Store) *sealer {
	if s, ok := s.(interface{ sealer() *sealer }); ok {
		return s.sealer()
	}
	return nil
}

// Copy copies every record of from into to, in one transaction of to, and
// returns how many it wrote: a record to already holds (a secret: the same
// opened value, sealed when to has a key) is not written again, so a second
// Copy writes nothing.
func Copy(ctx context.Context, from, to Store) (int, error) {
	recs, err := records(ctx, from)
	if err != nil {
		return 0, fmt.Errorf("reading the store to copy: %w", err)
	}
	n, seal := 0, sealerOf(to) != nil
	err = to.Update(ctx, func(tx Tx) error {
		n = 0
		for _, r := range recs {
			d, err := differs(tx, r, seal)
			if err != nil {
				return err
			}
			if d == "" {
				continue
			}
			if r.secret {
				err = tx.PutSecret(r.bucket, r.key, r.value)
			} else {
				err = tx.Put(r.bucket, r.key, r.value)
			}
			if err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("writing the copy: %w", err)
	}
	return n, nil
}

// differs says how tx's copy of r differs from r: "" when tx holds r as it
// is (a secret: its opened value, sealed when the store has a key: seal).
// It names no value.
func differs(tx Tx, r record, seal bool) (string, error) {
	if r.secret && seal {
		raw, err := tx.Get(r.bucket, r.key)
		if err != nil {
			return "", err
		}
		if raw != nil && !Sealed(raw) {
			return "a secret stored unsealed", nil
		}
	}
	get := tx.Get
	if r.secret {
		get = tx.GetSecret
	}
	have, err := get(r.bucket, r.key)
	if err != nil {
		return "", err
	}
	if have == nil || !bytes.Equal(have, r.value) {
		return "not copied as it is", nil
	}
	return "", nil
}

// Verify reports an error naming the first record of from that to does not
// hold as it is (a secret: its opened value, sealed when to has a key), and
// how many differ.
func Verify(ctx context.Context, from, to Store) error {
	recs, err := records(ctx, from)
	if err != nil {
		return err
	}
	var first error
	bad, seal := 0, sealerOf(to) != nil
	err = to.View(ctx, func(tx Tx) error {
		for _, r := range recs {
			d, err := differs(tx, r, seal)
			if err != nil {
				return err
			}
			if d != "" {
				if bad++; first == nil {
					first = fmt.Errorf("bucket %s, key %q: %s", r.bucket, r.key, d)
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if bad > 0 {
		return fmt.Errorf("%d of %d records differ; the first: %w", bad, len(recs), first)
	}
	return nil
}

// Rekey seals again, under s's current key, every secret sealed under an
// old key (Options.OldKeys) or kept unsealed, and returns how many.
func Rekey(ctx context.Context, s Store) (int, error) {
	seal := sealerOf(s)
	if seal == nil {
		return 0, errors.New("no storeKey is set: set the new key as storeKey and give the old one to rotate from")
	}
	n := 0
	err := s.Update(ctx, func(tx Tx) error {
		recs, err := walk(tx, seal)
		if err != nil {
			return err
		}
		n = 0
		for _, r := range recs {
			if !r.secret || seal.current(r.raw) {
				continue
			}
			n++
			if err := tx.PutSecret(r.bucket, r.key, r.value); err != nil {
				return err
			}
		}
		return nil
	})
	return n, err
}
