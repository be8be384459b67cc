// Package tasks keeps the durable records of the calls Warden runs as tasks
// (the 2026-07-28 tasks extension, SEP-2663), in the store, so that a task
// outlives its client and survives Warden restarting; any instance sharing
// the store answers for it. The surface speaks the wire; this package keeps
// the state, bounds how much of it runs, recovers what a dead instance left,
// and removes what expired.
//
// # The wire (as the conformance suite 0.2.0-alpha.12 checks it)
//
// Downstream is the 2026-07-28 revision: no sessions, every request says who
// it is in params._meta: "io.modelcontextprotocol/protocolVersion" (equal to
// the MCP-Protocol-Version header), "io.modelcontextprotocol/clientInfo" and
// "io.modelcontextprotocol/clientCapabilities".
//
// Capability. The server lists {"io.modelcontextprotocol/tasks": {}} under
// capabilities.extensions of server/discover (never a capabilities.tasks).
// A client opts in per request: the same key under
// _meta["io.modelcontextprotocol/clientCapabilities"].extensions. A request
// without it never gets a task: tasks/get, tasks/update and tasks/cancel
// are refused with -32021 (checked before the task id: an unknown id gets
// -32021 too), and a tools/call of a tool runs synchronously, unless its
// taskSupport is "required": then -32021 with data
// {"requiredCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}}.
//
// Which calls. Only tools/call. A tool declares execution.taskSupport in
// tools/list: "forbidden" (the default), "optional" or "required". The
// server alone decides to make a task; the client sends no hint. A v1
// client's params.task ({ttl, pollInterval}) is tolerated and ignored: it
// never makes a sync-only tool a task. A task-supporting call that finishes
// at once may answer its result directly.
//
// Results. Every result carries resultType: "complete" on a plain result
// (the sync tools/call, tasks/get, and the acknowledgements of tasks/update
// and tasks/cancel), "input_required" on a multi-round-trip question, "task"
// on a CreateTaskResult. A CreateTaskResult is flat (no "task" wrapper):
// resultType, taskId, status, statusMessage (optional), createdAt and
// lastUpdatedAt (ISO 8601), ttlMs (integer ms from creation until the task
// may be removed, or null: unlimited; always present) and pollIntervalMs (optional, integer
// ms > 0); never result, error, inputRequests, requestState, nor the v1
// names ttl and pollInterval. It is sent only once the task is durable: a
// tasks/get right after it must find it.
//
// Statuses: working, input_required, completed, failed, cancelled; the
// last three are terminal and final. working ↔ input_required; either →
// terminal. completed: the tool ran, its CallToolResult inlined as
// "result" (a tool error too, with isError true). failed: a JSON-RPC error
// instead of a result, inlined as "error" {code, message, data?}, with no
// "result" (statusMessage should say why).
//
// tasks/get {taskId} → the task as in CreateTaskResult but with resultType
// "complete", plus by status: inputRequests (input_required), result
// (completed), error (failed); never requestState, and the inlined result
// has no "io.modelcontextprotocol/related-task" _meta. An unknown (or
// another owner's) id: -32602. A task stays gettable for its ttlMs.
//
// tasks/update {taskId, inputResponses: {key: response}} → {resultType:
// "complete"}. inputRequests are {key: {method, params}} (elicitation/create,
// sampling/createMessage, roots/list), keys minted by the server, never
// reused over a task's life. Responses to keys not pending are ignored
// (the suite sends {"unknown-key": {"ignored": true}}, which parses as no
// known response type); a subset answers part: the task stays
// input_required, and the answered keys leave inputRequests; once none is
// pending it resumes. Unknown task: -32602 (should).
//
// tasks/cancel {taskId} → {resultType: "complete"} with no task fields; the
// status then settles to cancelled (the suite waits for it: slow_compute
// must end cancelled, not completed). Cancelling a finished task answers
// the same acknowledgement and changes nothing (the suite checks this:
// -32602 is for unknown ids only). notifications/cancelled is not used
// for tasks.
//
// tasks/result and tasks/list (the 2025-11-25 experimental tasks) are gone:
// -32601.
//
// Questions before the task. A tool may first ask by multi-round trip: its
// tools/call answers {resultType: "input_required", inputRequests,
// requestState?} with no taskId; the client calls again with
// inputResponses (and requestState), and that call may answer the
// CreateTaskResult (test_tool_with_task does: its final result holds the
// name given in round one). Questions during a task go through
// tasks/get and tasks/update instead.
//
// Notifications (optional): notifications/tasks, params the DetailedTask
// (what tasks/get would answer), sent on the subscriptions/listen stream to
// clients that listed the taskIds; the suite skips this scenario for now.
//
// Headers (streamable HTTP). Every request carries Mcp-Method (the body's
// method); tools/call and prompts/get carry Mcp-Name = params.name,
// resources/read params.uri, tasks/get|update|cancel params.taskId. A
// header that disagrees with the body (values trimmed of surrounding
// spaces) is refused: HTTP 400 with -32020 (HeaderMismatch). A missing
// MCP-Protocol-Version or one unequal to _meta's: 400, -32020; an
// unsupported version: -32022 with data {supported, requested}.
//
// # What this package keeps
//
// A Task per call: its id (130 random bits, rand.Text), its Owner (identity
// and session: nobody else finds it), server, tool and the arguments'
// canonical SHA-256 (never the arguments), the instance running it, status
// and times, poll interval and TTL, the result as JSON bytes or the error,
// and the questions pending with the answers not yet taken. Every change
// is one transaction under the task's lock and is published on Topic.
//
// A task passed through to an upstream that speaks the extension itself
// keeps the upstream's id for it (Upstream, set by Handed): it runs there,
// so it leaves the limits' count and Recover leaves it be, and it stays
// for about its TTL after its client last reached it (Renew).
package tasks
