package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/wardenmcp/warden/instances"
)

// warden status lists the instances of a shared store, a gone one marked
// so; the embedded store's status lists none.
func TestPrintInstances(t *testing.T) {
	var out bytes.Buffer
	g := &globals{stdout: &out}
	printInstances(g, nil)
	if out.Len() != 0 {
		t.Fatalf("no instances printed %q", out.String())
	}
	now := time.Now()
	printInstances(g, []instances.Instance{
		{ID: "a:7373", Listen: "10.0.0.1:7373", Version: "v1", LastSeen: now},
		{ID: "b:7373", Listen: "10.0.0.2:7373", Version: "v1", LastSeen: now.Add(-time.Minute), Gone: true},
	})
	got := out.String()
	for _, want := range []string{"2 instances share the store", "a:7373  http://10.0.0.1:7373  v1  last seen", "b:7373", "GONE: last seen 1m0s ago"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
}
