package surface_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/callers"
	"github.com/wardenmcp/warden/config"
	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/internal/testing/testenv"
)

// BenchmarkCallEras is a tools/call through /mcp/{server} by a client of
// each era, in process, anonymous and as a known caller (a client's token
// checked, its profile applied), for profiles of Warden's own share:
//
//	go test -run '^$' -bench BenchmarkCallEras -cpuprofile cpu.out ./surface/
//
// BenchmarkCallStatelessUpstream is the same to an upstream of that era.
// BenchmarkCallOIDC is the same call with an identity provider's access
// token, its keys cached: beside known=false it is what checking a JWT
// adds to a call.
func BenchmarkCallEras(b *testing.B) {
	fx := fixture.NewServer(fixture.Options{})
	e := newEnv(b, fmt.Sprintf(`{"fx": {"url": %q, "trusted": true}}`, fx.Serve(b)), 0, 0)
	e.WaitListed(b, "fx")
	cfg, err := config.Parse("", []byte(`{"clients": {"bot": {"tokenSha256": "`+testenv.TokenSHA256("bot-token")+`", "profile": "readonly"}},
		"profiles": {"readonly": {"classes": ["read"]}}}`), nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, known := range []bool{false, true} {
		transport := http.DefaultTransport
		if known {
			e.S.SetCallers(callers.New(cfg))
			transport = testenv.Bearer("bot-token")
		}
		for _, version := range []string{"2025-11-25", "2026-07-28"} {
			benchCall(b, e, fmt.Sprintf("%s/known=%t", version, known), version, transport)
		}
	}
}

// BenchmarkCallStatelessUpstream is a 2026-07-28 client's tools/call to an
// upstream that keeps no sessions and so speaks 2026-07-28 too.
func BenchmarkCallStatelessUpstream(b *testing.B) {
	fx := fixture.NewServer(fixture.Options{Stateless: true})
	e := newEnv(b, fmt.Sprintf(`{"fx": {"url": %q, "trusted": true}}`, fx.Serve(b)), 0, 0)
	e.WaitListed(b, "fx")
	benchCall(b, e, "2026-07-28", "2026-07-28", http.DefaultTransport)
}

func BenchmarkCallOIDC(b *testing.B) {
	e, prov := oidcEnv(b)
	token := prov.Token(b, "builder")
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		benchCall(b, e, version+"/oidc", version, testenv.Bearer(token))
	}
}

func benchCall(b *testing.B, e *env, name, version string, transport http.RoundTripper) {
	b.Run(name, func(b *testing.B) {
		c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
		cs, err := c.Connect(ctx(b), &mcp.StreamableClientTransport{Endpoint: e.URL + "/mcp/fx", DisableStandaloneSSE: true, HTTPClient: &http.Client{Transport: transport}},
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
