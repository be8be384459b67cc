package api

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/wardenmcp/warden/instances"
	"github.com/wardenmcp/warden/store"
)

// While the store cannot be reached a write is refused STORE_UNAVAILABLE
// (whether it is latched is unknown) and so is a clear (503); both work
// again once it is back.
func TestStoreUnavailable(t *testing.T) {
	e := callEnv(t)
	e.Store.Down(true)
	res := e.call("w", `{"tool": "write_value", "arguments": {"value": "v"}}`)
	if !res.IsError || res.Meta.Refusal.Code != "STORE_UNAVAILABLE" || !strings.Contains(res.text(), `the database the "store" setting names`) ||
		!strings.Contains(res.text(), "nothing was sent") {
		t.Fatalf("a write with the store down: %+v", res)
	}
	if res := e.call("w", `{"tool": "echo", "arguments": {"said": "hi"}}`); res.IsError {
		t.Errorf("a read with the store down: %+v; want it served", res)
	}
	expectError(t, e.do("DELETE", "/v1/writes/w", ""), refusal{http.StatusServiceUnavailable, "STORE_UNAVAILABLE",
		[]string{"nothing was changed", `the database the "store" setting names`, "warden status"}})

	e.Store.Down(false)
	if res := e.call("w", `{"tool": "write_value", "arguments": {"value": "v"}}`); res.IsError {
		t.Fatalf("a write with the store back: %+v", res)
	}
	if rec := e.do("DELETE", "/v1/writes/w", ""); rec.Code != http.StatusOK {
		t.Fatalf("a clear with the store back: %d %s", rec.Code, rec.Body)
	}
}

// GET /v1/instances lists the instances recorded in the store; the status
// of an embedded store does not.
func TestInstances(t *testing.T) {
	e := newEnv(t, `{}`)
	self := e.Store.Instance() // the store knows this one alive
	h, err := instances.Start(t.Context(), e.Store, instances.Instance{ID: self, Listen: "127.0.0.1:7373", Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Stop(context.Background()) })
	var list []instances.Instance
	decodeInto(t, e.do("GET", "/v1/instances", ""), &list)
	if len(list) != 1 || list[0].ID != self || list[0].Listen != "127.0.0.1:7373" || list[0].LastSeen.IsZero() || list[0].Gone {
		t.Fatalf("GET /v1/instances: %+v", list)
	}
	var st Status
	decodeInto(t, e.do("GET", "/v1/status", ""), &st)
	if st.Instances != nil {
		t.Fatalf("status of an embedded store lists instances: %+v", st.Instances)
	}
}

// A latch in the store that this instance's memory has not heard of (one
// another instance recorded) refuses the write at its admission:
// WRITES_LATCHED, with the stored call.
func TestLatchOnlyInTheStore(t *testing.T) {
	e := callEnv(t)
	err := e.Store.Update(t.Context(), func(tx store.Tx) error { // no Publish: as if the event were still on its way
		return tx.Put("write_latches", []byte("w"), []byte(`{"server":"w","tool":"elsewhere","reason":"timeout"}`))
	})
	if err != nil {
		t.Fatal(err)
	}
	res := e.call("w", `{"tool": "write_value", "arguments": {"value": "v"}}`)
	if !res.IsError || res.Meta.Refusal.Code != "WRITES_LATCHED" || !strings.Contains(res.text(), `"elsewhere"`) {
		t.Fatalf("a write to a server latched in the store: %+v; want WRITES_LATCHED naming the stored call", res)
	}
}

// An approval or block the store could not take answers 503
// STORE_UNAVAILABLE, as a clear does.
func TestDecisionStoreUnavailable(t *testing.T) {
	rec := httptest.NewRecorder()
	decisionError(rec, fmt.Errorf("approval: save: %w", store.ErrUnavailable))
	expectError(t, rec, refusal{http.StatusServiceUnavailable, "STORE_UNAVAILABLE", []string{"nothing was changed", "warden status"}})
}
