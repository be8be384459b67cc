package approval

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Every field survives a restart: statuses, hashes, both definitions,
// annotations, presence and times.
func TestRecordsSurviveRestart(t *testing.T) {
	ts := newStore(t)
	r := ts.r
	inv := inventory(4, "t")
	f := false
	inv[1].Annotations.DestructiveHint = &f
	must[ApplyResult](t)(r.Apply("fs", true, 1, inv))
	inv[0] = tool("t_0000", "v2 \u2028 <b>")
	inv[0].Annotations.ReadOnlyHint = false
	must[ApplyResult](t)(r.Apply("fs", true, 2, inv[:3]))
	must[Answer](t)(r.Block("fs", []string{"t_0002"}, "test"))
	must[ApplyResult](t)(r.Apply("pend", false, 1, inventory(2, "p")))

	for _, server := range []string{"fs", "pend"} {
		before := r.Tools(server)
		after := ts.reopen().Tools(server)
		r = ts.r
		for i := range before {
			before[i].LastSeen, after[i].LastSeen = time.Time{}, time.Time{}
		}
		for i := range before {
			if !reflect.DeepEqual(before[i], after[i]) {
				b, _ := json.Marshal(before[i])
				a, _ := json.Marshal(after[i])
				t.Fatalf("%s: record changed across restart:\n%s\n%s", server, b, a)
			}
		}
	}
	recs := r.Tools("fs")
	if recs[0].Status != StatusChanged || string(recs[0].Approved) == string(recs[0].Current) || recs[0].Annotations != nil {
		t.Fatalf("changed record %+v", recs[0])
	}
	if recs[3].Present || recs[2].Status != StatusBlocked || *recs[1].Annotations.DestructiveHint {
		t.Fatalf("records %+v", recs)
	}
	// Returned records are copies.
	recs[1].Annotations.ReadOnlyHint = false
	recs[1].Current[0] = 'X'
	if again := r.Tools("fs")[1]; !again.Annotations.ReadOnlyHint || again.Current[0] != '{' {
		t.Fatal("Tools returned the registry's own records")
	}
}

// OnChange runs outside the lock: a subscriber may call back into the registry.
func TestOnChangeOutsideLock(t *testing.T) {
	ts := newStore(t)
	r := ts.r
	var got []Change
	r.OnChange(func(c Change) {
		got = append(got, c)
		if len(got) == 1 {
			if err := r.Quarantine(c.Server, "test"); err != nil { // takes the same server's lock
				t.Error(err)
			}
		}
	})
	must[ApplyResult](t)(r.Apply("fs", true, 1, inventory(2, "t")))
	if len(got) != 2 || got[0].Version != 1 || got[1].Version != 2 || !got[1].Quarantined || !got[1].VisibleChanged {
		t.Fatalf("changes %+v", got)
	}
}

// A record's annotations are read back from its definition: canonical, as
// this package writes it, by one member; written otherwise (spaced, keys
// in another order), in full. Either way the same annotations.
func TestDecodeRecordAnnotations(t *testing.T) {
	f := false
	want := &mcp.ToolAnnotations{ReadOnlyHint: true, DestructiveHint: &f, Title: "T"}
	_, canonical, err := hashTool(&mcp.Tool{Name: "t", Description: `says "annotations"`, Annotations: want,
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{"annotations": map[string]any{"type": "string"}}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, def := range []string{string(canonical),
		`{ "name": "t", "annotations": {"title": "T", "readOnlyHint": true, "destructiveHint": false} }`,
		`{"annotations" : {"title": "T", "readOnlyHint": true, "destructiveHint": false}, "name": "t"}`} {
		rec := must[*ToolRecord](t)(decodeRecord("s", "t", encodeRecord(&ToolRecord{Status: StatusApproved, Current: json.RawMessage(def)}), nil))
		if !reflect.DeepEqual(rec.Annotations, want) {
			t.Errorf("annotations of %s: %+v, want %+v", def, rec.Annotations, want)
		}
	}
	rec := must[*ToolRecord](t)(decodeRecord("s", "t", encodeRecord(&ToolRecord{Status: StatusApproved,
		Current: json.RawMessage(`{"description":"no \"annotations\" here","name":"t"}`)}), nil))
	if rec.Annotations != nil {
		t.Errorf("annotations %+v of a definition without", rec.Annotations)
	}
}
