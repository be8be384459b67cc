package surface_test

import (
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/internal/testing/fixture"
)

// BenchmarkCallEras is a tools/call through /mcp/{server} by a client of
// each era, in process, for profiles of Warden's own share:
//
//	go test -run '^$' -bench BenchmarkCallEras -cpuprofile cpu.out ./surface/
func BenchmarkCallEras(b *testing.B) {
	fx := fixture.NewServer(fixture.Options{})
	e := newEnv(b, fmt.Sprintf(`{"fx": {"url": %q, "trusted": true}}`, fx.Serve(b)), 0, 0)
	e.WaitListed(b, "fx")
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		b.Run(version, func(b *testing.B) {
			c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
			cs, err := c.Connect(ctx(b), &mcp.StreamableClientTransport{Endpoint: e.URL + "/mcp/fx", DisableStandaloneSSE: true},
				&mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				b.Fatal(err)
			}
			defer cs.Close()
			params := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"payload": "x"}}
			b.ResetTimer()
			for b.Loop() {
				if res, err := cs.CallTool(ctx(b), params); err != nil || res.IsError {
					b.Fatal(res, err)
				}
			}
		})
	}
}
