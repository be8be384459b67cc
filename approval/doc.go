// Package approval pins MCP tool definitions by hash and quarantines servers
// until a human admits them: nothing runs that a human has not approved in its
// current form.
//
// Each definition is scanned by package guardrails when first seen or
// changed and its findings stored with the record: a high-severity one keeps
// the tool out of a trusted server's baseline and out of approvals of all
// tools unless forced (findings.go), so a person names it to approve it.
//
// Every record of one server is read, decided and written under that server's
// own mutex and its store lock (held across every instance sharing the
// store), in one transaction per discovery pass or operator decision that
// first reads the server's records again: memory is a cache of the store.
// Concurrent discovery passes, reloads and approvals therefore serialize per
// server, on one instance or many, and a pass whose inventory is older than
// one already applied by this instance writes nothing. Other instances'
// changes are announced on the store's topic "approval" and reloaded. The hot path (Check, Quarantined) reads an immutable per-server
// snapshot published after each commit: no lock, no I/O, no allocation.
package approval
