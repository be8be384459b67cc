package surface

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// hopMetaOf is the _meta of client i of a stateless-era call, with pad
// bytes more in its name.
func hopMetaOf(i, pad int) map[string]json.RawMessage {
	return map[string]json.RawMessage{
		mcp.MetaKeyProtocolVersion:    json.RawMessage(`"2026-07-28"`),
		mcp.MetaKeyClientInfo:         json.RawMessage(fmt.Sprintf(`{"name":"client-%d%s","version":"1"}`, i, strings.Repeat("x", pad))),
		mcp.MetaKeyClientCapabilities: json.RawMessage(fmt.Sprintf(`{"elicitation":{"form":{}},"roots":{"listChanged":%t}}`, i%2 == 0)),
	}
}

// Many clients' calls at once share the readings safely (run with -race),
// a reading from the cache is the one read afresh, and the cache stays
// bounded.
func TestHopReadingsConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 300 {
				meta := hopMetaOf((g*300+i)%(3*maxHopReadings), 0) // more clients than are kept
				caps, hop, ok := statelessMeta(meta)
				fresh := readHop(meta)
				if !ok || fresh == nil || !reflect.DeepEqual(*caps, fresh.caps) || !reflect.DeepEqual(hop, fresh.values) {
					t.Errorf("client %d: cached %+v %v, fresh %+v", i, caps, hop, fresh)
					return
				}
			}
		})
	}
	wg.Wait()
	hopReadings.mu.Lock()
	n := len(hopReadings.m)
	hopReadings.mu.Unlock()
	if n > maxHopReadings {
		t.Errorf("%d readings kept, at most %d wanted", n, maxHopReadings)
	}
}

// What the fast path cannot take is never kept, nor is a reading too large.
func TestHopReadingsKeepOnlyWhatTheFastPathTakes(t *testing.T) {
	hopReadings.mu.Lock()
	clear(hopReadings.m)
	hopReadings.mu.Unlock()
	bad := hopMetaOf(1, 0)
	bad[mcp.MetaKeyProtocolVersion] = json.RawMessage(`"2025-11-25"`)
	odd := hopMetaOf(2, 0)
	odd[mcp.MetaKeyClientCapabilities] = json.RawMessage(`{"Elicitation":{}}`) // Go's decoder would read it, the SDK's not
	for _, meta := range []map[string]json.RawMessage{bad, odd, bad} {
		if _, _, ok := statelessMeta(meta); ok {
			t.Errorf("taken: %s", meta[mcp.MetaKeyClientCapabilities])
		}
	}
	if _, _, ok := statelessMeta(hopMetaOf(3, maxHopKeyBytes)); !ok {
		t.Error("a long client name is not taken")
	}
	hopReadings.mu.Lock()
	defer hopReadings.mu.Unlock()
	if len(hopReadings.m) != 0 {
		t.Errorf("kept %d readings, want none", len(hopReadings.m))
	}
}

// BenchmarkHopReading is what reading a 2026-07-28 call's hop keys costs,
// from the cache and read afresh, side by side:
//
//	go test -run '^$' -bench BenchmarkHopReading -benchmem ./surface/
func BenchmarkHopReading(b *testing.B) {
	meta := hopMetaOf(1, 0)
	meta[mcp.MetaKeyClientCapabilities] = json.RawMessage(`{"elicitation":{"form":{},"url":{}},"sampling":{},"roots":{"listChanged":true}}`)
	b.Run("cached", func(b *testing.B) {
		for b.Loop() {
			if _, _, ok := statelessMeta(meta); !ok {
				b.Fatal("not taken")
			}
		}
	})
	b.Run("read", func(b *testing.B) {
		for b.Loop() {
			if readHop(meta) == nil {
				b.Fatal("not taken")
			}
		}
	})
}
