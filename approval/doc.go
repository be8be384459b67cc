// Package approval pins MCP tool definitions by hash and quarantines servers
// until a human admits them: nothing runs that a human has not approved in its
// current form.
//
// Every record of one server is read, decided and written under that server's
// own mutex, in one bbolt transaction per discovery pass or operator decision.
// Concurrent discovery passes, reloads and approvals therefore serialize per
// server, and a pass whose inventory is older than one already applied writes
// nothing. The hot path (Check, Quarantined) reads an immutable per-server
// snapshot published after each commit: no lock, no I/O, no allocation.
package approval
