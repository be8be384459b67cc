package e2e

import (
	"strings"
	"testing"

	"github.com/wardenmcp/warden/internal/testing/testenv"
)

// clientHarness builds warden and the harness the suite's client scenarios
// run (internal/testing/fixture/cmd/clientharness: warden serve with the scenario's
// server as its only upstream, a login when Warden says it needs one, the
// scenario's calls through /mcp/s), and the environment the harness needs.
// The harness's daemons keep their state under TMPDIR: the test's, so
// nothing is left behind even when the suite kills a harness.
func clientHarness(t *testing.T) (harness string, env []string) {
	env = []string{"WARDEN_BIN=" + testenv.BuildBinary(t, "./cmd/warden"), "TMPDIR=" + t.TempDir()}
	return testenv.BuildBinary(t, "./internal/testing/fixture/cmd/clientharness"), env
}

// clientScenario is one run of a client scenario; args choose its wire
// revision (by default the suite's: 2025-11-25, or 2026-07-28 for
// scenarios that revision introduced).
type clientScenario struct {
	name string
	args []string
}

func (s clientScenario) String() string {
	if len(s.args) == 0 {
		return s.name
	}
	return s.name + " " + strings.Join(s.args, " ")
}

// The official suite's client scenarios, with Warden as the MCP client of
// the scenario's server and an agent calling through Warden.
func TestClientConformance(t *testing.T) {
	harness, env := clientHarness(t)
	run := func(list []clientScenario) (failed []string, outputs string) {
		for _, s := range list {
			ok, out := testenv.RunConformanceScenario(t, harness, env, s.name, append(s.args, "--timeout", "120000")...)
			if !ok {
				failed = append(failed, s.String())
				outputs += "\n=== " + s.String() + "\n" + out
			}
		}
		return failed, outputs
	}

	// The 2025-11-25 client scenarios (what 2025-11-25 requires of a client
	// less the auth ones, which TestOAuthConformance runs).
	pass2025 := []clientScenario{{name: "initialize"}, {name: "tools_call"}, {name: "sse-retry"},
		{name: "elicitation-sep1034-client-defaults"}, {name: "json-schema-2020-12-preservation"}}
	// The 2026-07-28 client scenarios: server/discover with the version
	// fallback, _meta and the headers on every request, multi-round-trip
	// results, schemas passed on as they are.
	scenarios2026 := []clientScenario{{name: "http-invalid-tool-headers"}, {name: "json-schema-ref-no-deref"}, {name: "http-custom-headers"},
		{name: "request-metadata"}, {name: "http-standard-headers"}, {name: "sep-2322-client-request-state"},
		{name: "tools_call", args: []string{"--spec-version", "2026-07-28"}}}
	if failed, out := run(append(pass2025, scenarios2026...)); len(failed) > 0 {
		t.Errorf("client scenarios failed: %s\n%s", strings.Join(failed, ", "), out)
	}
}
