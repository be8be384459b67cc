// Package e2e runs Warden end to end against real MCP parts: the official
// conformance suite, the Go SDK's conformance fixture and the reference
// servers from npm.
package e2e

import (
	"testing"

	"github.com/wardenmcp/warden/internal/testing/testenv"
	"github.com/wardenmcp/warden/internal/testing/wardentest"
)

// The official conformance suite, pointed at /mcp/everything, must pass as
// it does against the fixture directly: over HTTP and over stdio.
func TestConformanceThroughWarden(t *testing.T) {
	fixtureURL := testenv.StartEverythingServer(t)
	bin := testenv.BuildBinary(t, testenv.EverythingServerPkg)
	for name, server := range map[string]map[string]any{
		"http":  {"url": fixtureURL, "trusted": true},
		"stdio": {"command": bin, "trusted": true},
	} {
		t.Run(name, func(t *testing.T) {
			w := wardentest.Start(t, map[string]any{"everything": server})
			w.WaitReady(t, "everything")
			passed, failed, out := testenv.RunConformance(t, w.URL("/mcp/everything"))
			if failed != 0 || passed != testenv.ConformanceExpectedPassed {
				t.Fatalf("conformance through warden (%s upstream): %d passed, %d failed; want %d passed, 0 failed\n%s\nwarden log:\n%s",
					name, passed, failed, testenv.ConformanceExpectedPassed, out, w.Logs)
			}
		})
	}
}

// The suite's requirements of 2026-07-28, through /mcp/everything, beside
// the same upstream directly: a stateless upstream (it speaks 2026-07-28
// itself) and a stateful one (2025 sessions only, which Warden translates
// for stateless-era clients). And 2025-11-25 through the stateless one.
//
// Through Warden first: the fixture's list-changing tools add the same
// tool and prompt each time, which is a change only the first time.
//
// Short of the stateless upstream directly by one check, by Warden's rule:
// the tool the suite has the upstream add, to see tools/list_changed on a
// subscription (a SHOULD), waits for an operator's approval, so the list
// clients see does not change. Short of that with the stateful upstream by
// 2 checks, for what a 2025 server cannot say: the name of its question
// (it asks on its session, without the key its 2026 tool uses, which the
// suite looks for; and the round after). The tasks extension's checks
// fail directly (the fixture does not serve it) and all but three through
// Warden (it is listed, gated and its removed methods unknown): the rest
// call task tools the fixture has not (see TestTaskScenariosThroughWarden).
func TestConformance2026ThroughWarden(t *testing.T) {
	stateless := testenv.StartStatelessEverythingServer(t)
	stateful := testenv.StartEverythingServer(t)
	w := wardentest.Start(t, map[string]any{
		"sl": map[string]any{"url": stateless, "trusted": true},
		"sf": map[string]any{"url": stateful, "trusted": true},
	})
	w.WaitReady(t, "sl")
	w.WaitReady(t, "sf")
	req := []string{"--requirements", "2026-07-28"}

	viaSL, _, outSL := testenv.RunConformance(t, w.URL("/mcp/sl"), req...)
	viaSF, _, outSF := testenv.RunConformance(t, w.URL("/mcp/sf"), req...)
	directSL, _, _ := testenv.RunConformance(t, stateless, req...)
	directSF, _, _ := testenv.RunConformance(t, stateful, req...)
	t.Logf("2026-07-28 requirements: stateless upstream %d directly, %d through Warden; stateful upstream %d directly, %d through Warden",
		directSL, viaSL, directSF, viaSF)
	// Measured when written: 165 and 167, 69 and 165.
	if viaSL < directSL-1 {
		t.Errorf("stateless upstream: %d checks passed through Warden, %d directly: more than the one check short by Warden's rule\n%s", viaSL, directSL, outSL)
	}
	if viaSF < viaSL-2 || viaSF <= directSF {
		t.Errorf("stateful upstream: %d checks passed through Warden (%d directly, %d through Warden with the stateless one): translating should pass all but the 2 a 2025 server cannot\n%s", viaSF, directSF, viaSL, outSF)
	}

	direct, _, _ := testenv.RunConformance(t, stateless)
	via, failed, out := testenv.RunConformance(t, w.URL("/mcp/sl"))
	if via < direct {
		t.Errorf("2025-11-25 through Warden with the stateless upstream: %d passed, %d failed; directly %d passed\n%s", via, failed, direct, out)
	}
}
