package guardrails

import (
	"flag"
	"os"
	"testing"

	"github.com/zricethezav/gitleaks/v8/config"
)

var updateGitleaks = flag.Bool("update-gitleaks", false, "write the gitleaks module's default config to gitleaks.toml")

// The embedded rule set is gitleaks' own default config, byte for byte, of
// the version go.mod requires: updating the module (go get
// github.com/zricethezav/gitleaks/v8@VERSION) fails here until the copy is
// refreshed with: go test ./guardrails -run TestGitleaksRulesAreTheModules -update-gitleaks
// (The module is imported by this test only: its config package brings
// viper, zerolog and a dozen more modules that Warden's binary does not need.)
func TestGitleaksRulesAreTheModules(t *testing.T) {
	if *updateGitleaks {
		if err := os.WriteFile("gitleaks.toml", []byte(config.DefaultConfig), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if string(gitleaksTOML) != config.DefaultConfig {
		t.Fatal("guardrails/gitleaks.toml is not the gitleaks module's config/gitleaks.toml; refresh it with: go test ./guardrails -run TestGitleaksRulesAreTheModules -update-gitleaks")
	}
	rs := loadSecretRules()
	if len(rs.rules) < 200 {
		t.Fatalf("only %d rules loaded", len(rs.rules))
	}
	for _, r := range rs.rules {
		r.compiled() // every rule compiles with Go's regexp
	}
}
