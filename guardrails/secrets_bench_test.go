package guardrails

import (
	"strings"
	"testing"
)

// BenchmarkArgumentsCheck is the per-call secret check of typical small
// arguments (a path, a query that names an API key and a token, a number,
// a flag, a commit hash), beside walk-only, reading their strings with no
// rule (the floor of any check; a server that allows secrets pays
// nothing), and a 1 MiB argument of prose dense in keywords (a huge call's
// check stays linear). gateway's BenchmarkCallSecretsCheck is a whole call
// with and without it.
func BenchmarkArgumentsCheck(b *testing.B) {
	typical := args(b, map[string]any{"path": "/home/user/project/README.md",
		"query": "how do I rotate the api key for the staging token?", "limit": 10, "recursive": true,
		"owner": "wardenmcp", "repo": "warden", "sha": "da39a3ee5e6b4b0d3255bfef95601890afd80709"})
	huge := args(b, map[string]any{"content": strings.Repeat("the key to the api is a token they keep secret; ", 1<<20/48)})
	FindSecrets(typical) // the rules load once, on first use
	b.Run("walk-only", func(b *testing.B) {
		b.SetBytes(int64(len(typical)))
		for b.Loop() {
			walkStrings(typical, MaxSecretScan, func([]pathPart, string, bool) bool { return true })
		}
	})
	b.Run("typical", func(b *testing.B) {
		b.SetBytes(int64(len(typical)))
		for b.Loop() {
			if FindSecrets(typical) != nil {
				b.Fatal("found a secret")
			}
		}
	})
	b.Run("huge-1MiB", func(b *testing.B) {
		b.SetBytes(int64(len(huge)))
		for b.Loop() {
			FindSecrets(huge)
		}
	})
}
