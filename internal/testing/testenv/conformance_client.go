package testenv

import (
	"regexp"
	"strings"
	"testing"
)

var scenarioRE = regexp.MustCompile(`(?m)^([✓✗]) (\S+): `)

// RunConformanceClient runs `conformance client --command COMMAND ARGS...`
// with Node 22 and env added to its environment (the command inherits it),
// and returns each scenario's outcome from the suite summary (true:
// passed) and the whole output. The test fails if the suite prints no
// summary; judging the outcomes is the caller's.
func RunConformanceClient(t testing.TB, command string, env []string, args ...string) (passed map[string]bool, output string) {
	t.Helper()
	args = append([]string{ConformanceScript(t), "client", "--command", command}, args...)
	output, err := runNode(t, Node22(t), args, append(NodeEnv(t), env...))
	passed = map[string]bool{}
	for _, m := range scenarioRE.FindAllStringSubmatch(output, -1) {
		passed[m[2]] = m[1] == "✓"
	}
	if len(passed) == 0 {
		t.Fatalf("testenv: conformance client printed no summary (exit: %v):\n%s", err, output)
	}
	return passed, output
}

// RunConformanceScenario runs `conformance client --command COMMAND
// --scenario SCENARIO ARGS...` like RunConformanceClient, and reports
// whether the suite judged it passed (exit status 0 and "OVERALL: PASSED";
// a scenario skipped as not applicable did not pass), with the whole
// output. The test fails if the suite printed no test results.
func RunConformanceScenario(t testing.TB, command string, env []string, scenario string, args ...string) (passed bool, output string) {
	t.Helper()
	args = append([]string{ConformanceScript(t), "client", "--command", command, "--scenario", scenario}, args...)
	output, err := runNode(t, Node22(t), args, append(NodeEnv(t), env...))
	if !strings.Contains(output, "Test Results:") && !strings.Contains(output, "SKIPPED:") {
		t.Fatalf("testenv: conformance client --scenario %s printed no results (exit: %v):\n%s", scenario, err, output)
	}
	return err == nil && strings.Contains(output, "OVERALL: PASSED"), output
}
