package e2e

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/wardenmcp/warden/internal/testing/testenv"
)

// The official suite's client auth scenarios, with Warden as the OAuth
// client driven as a person would (clientHarness: warden serve, warden auth
// login --no-browser, follow the redirect, list and call through Warden).
func TestOAuthConformance(t *testing.T) {
	harness, env := clientHarness(t)

	// All 14 scenarios of 2025-11-25.
	got, out := testenv.RunConformanceClient(t, harness, env, "--suite", "auth", "--spec-version", "2025-11-25", "--timeout", "120000")
	if len(got) != 14 || slices.Contains(slices.Collect(maps.Values(got)), false) {
		t.Errorf("auth suite, 2025-11-25: want 14 scenarios passed, got %v\n%s", got, out)
	}

	// What 2026-07-28 requires of an OAuth client. Out: the extensions
	// (client credentials, enterprise, DPoP, workload identity), which are
	// not scored.
	got, out = testenv.RunConformanceClient(t, harness, env, "--requirements", "2026-07-28", "--timeout", "120000")
	want := []string{"metadata-default", "metadata-var1", "metadata-var2", "metadata-var3", "basic-cimd",
		"scope-from-www-authenticate", "scope-from-scopes-supported", "scope-omitted-when-undefined",
		"token-endpoint-auth-basic", "token-endpoint-auth-post", "token-endpoint-auth-none", "pre-registration",
		"resource-mismatch", "offline-access-scope", "offline-access-not-supported",
		"iss-supported", "iss-not-advertised", "iss-supported-missing", "iss-wrong-issuer", "iss-unexpected", "iss-normalized",
		"metadata-issuer-mismatch", "scope-retry-limit", "scope-step-up", "authorization-server-migration"}
	var failed []string
	for _, s := range want {
		if !got["auth/"+s] {
			failed = append(failed, s)
		}
	}
	if len(failed) > 0 {
		t.Errorf("2026-07-28 auth scenarios failed or missing: %s\n%s", strings.Join(failed, ", "), out)
	}
}
