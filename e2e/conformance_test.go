// Package e2e runs Warden end to end against real MCP parts: the official
// conformance suite, the Go SDK's conformance fixture and the reference
// servers from npm.
package e2e

import (
	"testing"

	"github.com/wardenmcp/warden/internal/testenv"
	"github.com/wardenmcp/warden/internal/wardentest"
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
