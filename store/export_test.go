package store

import "time"

// SetIdleInTransaction shortens how long PostgreSQL keeps a transaction
// whose client went silent, for a test; it returns the previous value.
func SetIdleInTransaction(d time.Duration) time.Duration {
	old := idleInTransaction
	idleInTransaction = d
	return old
}

// SetMigrating sets the hook migrate calls under its lock with the schema
// version it found, before migrating; it returns the previous hook.
func SetMigrating(hook func(version int)) func(version int) {
	old := migrating
	migrating = hook
	return old
}

// SetMigrations sets the schema migrations, for a test of an upgrade; it
// returns the previous list.
func SetMigrations(list []string) []string {
	old := migrations
	migrations = list
	return old
}

// Migrations returns the schema migrations this Warden knows.
func Migrations() []string { return migrations }
