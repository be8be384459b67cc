package store

import "time"

// SetIdleInTransaction shortens how long PostgreSQL keeps a transaction
// whose client went silent, for a test; it returns the previous value.
func SetIdleInTransaction(d time.Duration) time.Duration {
	old := idleInTransaction
	idleInTransaction = d
	return old
}
