package surface

import (
	"encoding/json"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// hopKeys are the _meta keys in which a stateless-era client describes
// its hop to Warden on every request.
var hopKeys = []string{mcp.MetaKeyProtocolVersion, mcp.MetaKeyClientInfo, mcp.MetaKeyClientCapabilities}

// hopReading is how a client's hop keys read: its capabilities, and the
// keys' values decoded, which every call with the same bytes shares and
// none changes (they are read for the caller's name, and never sent on:
// see hopMeta).
type hopReading struct {
	caps   mcp.ClientCapabilities
	values map[string]any
}

// hopReadings remembers the readings of the last few clients by the bytes
// of their hop keys: a client sends the same on every call, and reading
// them (each decoded twice and walked for keys in other capitals) cost
// more than the rest of the request's JSON. BenchmarkHopReading, 6
// December 2026, the machine loaded: 25–27 µs a call read afresh, 1.1–1.2
// µs from here. Only readings the fast path can take are kept, at most
// maxHopReadings of at most maxHopKeyBytes each.
var hopReadings = &hopCache{m: map[string]*hopReading{}}

const (
	maxHopReadings = 64
	maxHopKeyBytes = 4 << 10
)

type hopCache struct {
	mu sync.Mutex
	m  map[string]*hopReading
}

// read is meta's reading, from the cache or read now (nil: the fast path
// cannot take it).
func (c *hopCache) read(meta map[string]json.RawMessage) *hopReading {
	var b strings.Builder
	for _, k := range hopKeys {
		b.Write(meta[k]) // raw JSON holds no NUL byte: the keys cannot run together
		b.WriteByte(0)
	}
	key := b.String()
	if len(key) > maxHopKeyBytes {
		return readHop(meta)
	}
	c.mu.Lock()
	r, ok := c.m[key]
	c.mu.Unlock()
	if ok {
		return r
	}
	if r = readHop(meta); r == nil {
		return nil
	}
	c.mu.Lock()
	if len(c.m) >= maxHopReadings {
		clear(c.m)
	}
	c.m[key] = r
	c.mu.Unlock()
	return r
}
