package store

import (
	"bytes"
	"context"
	"fmt"
)

// Copy copies every key of every bucket of from into to, value byte for
// byte, and returns how many keys it wrote (new or changed): run twice, the
// second run writes nothing. It deletes nothing in to.
//
// Sealed values are copied as they are, still sealed under the key they
// were written with (their bucket and key, which the seal is bound to, do
// not change): open to with that key, or with it among OldKeys and then
// Rekey. Buckets without keys are not copied (PostgreSQL has none).
func Copy(ctx context.Context, from, to Store) (n int, err error) {
	return rewrite(ctx, from, to, "copy", func(tx Tx, b string, k, v []byte) (bool, error) {
		old, err := tx.Get(b, k)
		if err != nil || (old != nil && bytes.Equal(old, v)) {
			return false, err
		}
		return true, tx.Put(b, k, v)
	})
}

// Verify reports, as an error naming the first difference, whether a and b
// hold different keys or values (buckets without keys do not count).
func Verify(ctx context.Context, a, b Store) error {
	da, err := dump(ctx, a)
	if err != nil {
		return err
	}
	db, err := dump(ctx, b)
	if err != nil {
		return err
	}
	for i := range max(len(da), len(db)) {
		switch {
		case i >= len(da):
			return fmt.Errorf("bucket %s: key %q is only in the second store", db[i].bucket, db[i].key)
		case i >= len(db):
			return fmt.Errorf("bucket %s: key %q is only in the first store", da[i].bucket, da[i].key)
		case da[i].bucket != db[i].bucket || !bytes.Equal(da[i].key, db[i].key):
			return fmt.Errorf("the stores' keys differ from bucket %s key %q (the second has bucket %s key %q there)",
				da[i].bucket, da[i].key, db[i].bucket, db[i].key)
		case !bytes.Equal(da[i].value, db[i].value):
			return fmt.Errorf("bucket %s: key %q has different values", da[i].bucket, da[i].key)
		}
	}
	return nil
}

type entry struct {
	bucket     string
	key, value []byte
}

// dump is every key of s, bucket by bucket in bucketPaths' order.
func dump(ctx context.Context, s Store) ([]entry, error) {
	var es []entry
	err := eachBucket(ctx, s, func(b string, kvs [][2][]byte) error {
		for _, kv := range kvs {
			es = append(es, entry{b, kv[0], kv[1]})
		}
		return nil
	})
	return es, err
}

// Rekey re-seals every sealed value that is not under s's current key (s is
// opened with the new key, the old ones among OldKeys) and returns how many
// it re-sealed. Run again, it re-seals nothing.
func Rekey(ctx context.Context, s Store) (n int, err error) {
	return rewrite(ctx, s, s, "rekey", func(tx Tx, b string, k, v []byte) (bool, error) {
		if !Sealed(v) || tx.(sealedTx).s.current(v) {
			return false, nil
		}
		plain, err := tx.GetSecret(b, k) // as it is now, in this transaction
		if err != nil {
			return false, err
		}
		return true, tx.PutSecret(b, k, plain)
	})
}

// rewrite calls each for every key and value of src, bucket by bucket in
// one Update of dst per bucket, and counts the keys each wrote (true).
func rewrite(ctx context.Context, src, dst Store, doing string, each func(tx Tx, bucket string, k, v []byte) (bool, error)) (n int, err error) {
	err = eachBucket(ctx, src, func(b string, kvs [][2][]byte) error {
		written := 0
		err := dst.Update(ctx, func(tx Tx) error {
			written = 0 // fn may run again
			for _, kv := range kvs {
				wrote, err := each(tx, b, kv[0], kv[1])
				if err != nil {
					return err
				}
				if wrote {
					written++
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("%s bucket %s: %w", doing, b, err)
		}
		n += written
		return nil
	})
	return n, err
}

// eachBucket calls fn with each bucket of s, in bucketPaths' order, and its
// keys and values (read in a View of their own).
func eachBucket(ctx context.Context, s Store, fn func(bucket string, kvs [][2][]byte) error) error {
	paths, err := bucketPaths(ctx, s)
	if err != nil {
		return err
	}
	for _, b := range paths {
		kvs, err := read(ctx, s, b)
		if err != nil {
			return err
		}
		if err := fn(b, kvs); err != nil {
			return err
		}
	}
	return nil
}

// bucketPaths lists every bucket of s that holds keys or buckets, parents
// before children, in order.
func bucketPaths(ctx context.Context, s Store) ([]string, error) {
	var paths []string
	err := s.View(ctx, func(tx Tx) error {
		paths = nil
		var walk func(parent string) error
		walk = func(parent string) error {
			var names []string
			if err := tx.Buckets(parent, func(name string) error { names = append(names, name); return nil }); err != nil {
				return err
			}
			for _, name := range names {
				if parent != "" {
					name = parent + "/" + name
				}
				paths = append(paths, name)
				if err := walk(name); err != nil {
					return err
				}
			}
			return nil
		}
		return walk("")
	})
	return paths, err
}

// read returns bucket's keys and values in order, as [key, value] pairs
// that outlive the transaction.
func read(ctx context.Context, s Store, bucket string) ([][2][]byte, error) {
	var kvs [][2][]byte
	err := s.View(ctx, func(tx Tx) error {
		kvs = nil
		return tx.Scan(bucket, nil, false, func(k, v []byte) error {
			kvs = append(kvs, [2][]byte{bytes.Clone(k), bytes.Clone(v)})
			return nil
		})
	})
	return kvs, err
}
