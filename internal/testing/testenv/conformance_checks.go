package testenv

import (
	"regexp"
	"testing"
)

// checkRE reads one check of the suite's output: "[check-id  ] STATUS",
// the status maybe in colour.
var checkRE = regexp.MustCompile(`\[([a-z0-9][a-z0-9-]*)\s*\]\s*(?:\x1b\[[0-9;]*m)?(SUCCESS|FAILURE|WARNING|SKIPPED|INFO)`)

// Check is one check of a conformance scenario and its status (SUCCESS,
// FAILURE, WARNING, SKIPPED or INFO).
type Check struct{ ID, Status string }

// RunServerScenario runs `conformance server --url URL --spec-version
// VERSION --scenario NAME --force` (an extension's scenario is run only so)
// and returns its checks in order, with the output. The test fails if the
// suite printed no check.
func RunServerScenario(t testing.TB, url, version, scenario string) ([]Check, string) {
	t.Helper()
	args := []string{ConformanceScript(t), "server", "--url", url, "--spec-version", version, "--scenario", scenario, "--force"}
	output, err := runNode(t, Node22(t), args, NodeEnv(t))
	var checks []Check
	for _, m := range checkRE.FindAllStringSubmatch(output, -1) {
		checks = append(checks, Check{ID: m[1], Status: m[2]})
	}
	if len(checks) == 0 {
		t.Fatalf("testenv: conformance scenario %s against %s printed no check (exit: %v):\n%s", scenario, url, err, output)
	}
	return checks, output
}
