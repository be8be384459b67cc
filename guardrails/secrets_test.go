package guardrails

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// mix returns n bytes of alphabet in a fixed pseudo-random order, so the
// test credentials below are varied like real ones without any being
// written in the repository whole.
func mix(n int, alphabet string) string {
	b := make([]byte, n)
	x := uint32(2463534242)
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = alphabet[x%uint32(len(alphabet))]
	}
	return string(b)
}

const (
	upperDigits = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	alnum       = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	urlSafe     = alnum + "_-"
)

// testSecrets are one credential of each format the issue names, made up.
var testSecrets = map[string]string{
	"aws-access-token":        "AKIA" + mix(16, upperDigits),
	"github-pat":              "ghp_" + mix(36, alnum),
	"github-fine-grained-pat": "github_pat_" + mix(82, alnum+"_"),
	"slack-bot-token":         "xoxb-" + "1234567890" + "-" + "9876543210" + "-" + mix(24, alnum),
	"stripe-access-token":     "sk_" + "live_" + mix(24, alnum),
	"gcp-api-key":             "AIza" + mix(35, urlSafe),
	"openai-api-key":          "sk-proj-" + mix(74, urlSafe) + "T3Blbk" + "FJ" + mix(74, urlSafe),
	"anthropic-api-key":       "sk-ant-" + "api03-" + mix(93, urlSafe) + "AA",
	"private-key": "-----BEGIN RSA " + "PRIVATE KEY-----\n" + mix(64, alnum) + "\n" + mix(64, alnum) +
		"\n-----END RSA PRIVATE KEY-----",
	"jwt": "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9." + "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ." +
		mix(43, urlSafe),
}

func args(t testing.TB, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestFindSecretsEachFormat(t *testing.T) {
	for rule, secret := range testSecrets {
		t.Run(rule, func(t *testing.T) {
			// Nested, beside benign values, under a name that says nothing.
			a := args(t, map[string]any{"note": "hello", "opts": map[string]any{"items": []any{1, "x", secret}}})
			got := FindSecrets(a)
			want := []SecretFinding{{Path: "opts.items[2]", Rule: rule}}
			if !slices.Equal(got, want) {
				t.Fatalf("FindSecrets = %+v, want %+v", got, want)
			}
			// In prose, as a model may paste it.
			got = FindSecrets(args(t, map[string]any{"body": "here it is: " + secret + " thanks"}))
			if len(got) != 1 || got[0].Rule != rule || got[0].Path != "body" {
				t.Fatalf("in prose: %+v", got)
			}
			// As an object key, where no path may show it.
			pw := mix(14, alnum+"!#%&*")
			got = FindSecrets(args(t, map[string]any{"opts": map[string]any{secret: map[string]any{"password": pw}}}))
			want = []SecretFinding{{Path: "a key in opts", Rule: rule}, {Path: `opts["[REDACTED:` + rule + `]"].password`, Rule: RuleSecretParam}}
			if !slices.Equal(got, want) {
				t.Fatalf("as a key: %+v, want %+v", got, want)
			}
			masked := MaskSecrets("the key " + secret + " leaked")
			if strings.Contains(masked, secret) || !strings.Contains(masked, "[REDACTED:"+rule+"]") || !strings.HasPrefix(masked, "the key ") {
				t.Fatalf("MaskSecrets = %q", masked)
			}
		})
	}
}

func TestFindSecretsByParameterName(t *testing.T) {
	pw := mix(14, alnum+"!#%&*")
	for _, tc := range []struct {
		args any
		want []SecretFinding
	}{
		{map[string]any{"password": pw}, []SecretFinding{{"password", RuleSecretParam}}},
		{map[string]any{"db": map[string]any{"clientSecret": pw}}, []SecretFinding{{"db.clientSecret", RuleSecretParam}}},
		{map[string]any{"headers": map[string]any{"X-Api-Key": pw}}, []SecretFinding{{"headers.X-Api-Key", RuleSecretParam}}},
		{map[string]any{"odd key token": pw}, []SecretFinding{{`["odd key token"]`, RuleSecretParam}}},
		// Not secrets: low entropy, placeholders, prose, names about a secret.
		{map[string]any{"password": "hunter22"}, nil},
		{map[string]any{"password": "${DB_PASSWORD}"}, nil},
		{map[string]any{"token": "{{ secrets.TOKEN }}"}, nil},
		{map[string]any{"secret": "the one I told you about yesterday"}, nil},
		{map[string]any{"page_token": pw, "next_token": pw, "max_tokens": 4000, "secret_name": pw, "token_type": pw}, nil},
		{map[string]any{"api_key_id": pw, "keyboard": pw, "key": pw, "monkey": pw}, nil},
	} {
		got := FindSecrets(args(t, tc.args))
		if !slices.Equal(got, tc.want) {
			t.Errorf("FindSecrets(%v) = %+v, want %+v", tc.args, got, tc.want)
		}
	}
}

// Benign values of the kinds tools take every day are not flagged.
func TestFindSecretsLeavesBenignValues(t *testing.T) {
	for _, a := range []any{
		map[string]any{"id": "550e8400-e29b-41d4-a716-446655440000", "request_id": "f47ac10b-58cc-4372-a567-0e02b2c3d479"},
		map[string]any{"sha": "da39a3ee5e6b4b0d3255bfef95601890afd80709", "commit": "9fceb02d0ae598e95dc970b74767f19372d61af8a3d0c6b7e2f1a4c5d8e9f0a1b"},
		map[string]any{"sha256": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		map[string]any{"url": "https://api.example.com/v1/keys?page=2&limit=50", "path": "/home/user/project/src/auth/token.go"},
		map[string]any{"query": "how do I rotate the API key and the access token for staging?"},
		map[string]any{"body": "Dear team, the secret to a good release is testing. The key takeaway: password rules changed; see the wiki."},
		map[string]any{"content": "func main() {\n\tkey := os.Getenv(\"API_KEY\")\n\ttoken := flag.String(\"token\", \"\", \"the token\")\n}"},
		map[string]any{"data": strings.Repeat("ey ", 1000), "b64": "aGVsbG8gd29ybGQsIHRoaXMgaXMgbm90IGEgc2VjcmV0"},
		map[string]any{"key": "AKIAIOSFODNN7EXAMPLE"}, // AWS's documented example key
		[]any{1, 2.5, true, nil, map[string]any{}},
	} {
		if got := FindSecrets(args(t, a)); got != nil {
			t.Errorf("FindSecrets(%v) = %+v, want none", a, got)
		}
	}
	if got := FindSecrets([]byte(`{"a": "not closed`)); got != nil {
		t.Errorf("broken JSON: %+v", got)
	}
	const prose = "The key takeaway is that the token bucket refills every second."
	if got := MaskSecrets(prose); got != prose {
		t.Errorf("MaskSecrets changed prose: %q", got)
	}
}

// Escaped strings are read unescaped, and at most a few findings come back.
func TestFindSecretsEscapesAndLimit(t *testing.T) {
	aws := testSecrets["aws-access-token"]
	escaped := []byte(`{"k": "\u0041` + aws[1:] + `"}`)
	if got := FindSecrets(escaped); len(got) != 1 || got[0].Path != "k" {
		t.Errorf("escaped: %+v", got)
	}
	many := map[string]any{}
	for _, k := range []string{"a", "b", "c", "d", "e"} {
		many[k] = aws
	}
	if got := FindSecrets(args(t, many)); len(got) != maxSecretFindings || got[0].Path != "a" {
		t.Errorf("many: %+v", got)
	}
}

// A secret past MaxSecretScan bytes of strings is not read: the bound that
// keeps a huge argument's check short.
func TestFindSecretsBound(t *testing.T) {
	aws := testSecrets["aws-access-token"]
	if got := FindSecrets(args(t, []string{strings.Repeat("x", MaxSecretScan-100) + " " + aws})); len(got) != 1 {
		t.Errorf("within the bound: %+v", got)
	}
	if got := FindSecrets(args(t, []string{strings.Repeat("x", MaxSecretScan), aws})); got != nil {
		t.Errorf("past the bound: %+v", got)
	}
}

// The walk hands over each string's first max bytes, escapes read, with
// its path; broken JSON ends it.
func TestWalkStrings(t *testing.T) {
	var got []string
	walkStrings([]byte(`{"a": "abcdef", "b": ["x\u0041yz", "q\u0041", 3, {"c": "\"s\""}], "d": null, "e": "`), 3,
		func(path []pathPart, s string, key bool) bool {
			if key {
				s = "key " + s
			}
			got = append(got, pathString(path)+"="+s)
			return true
		})
	want := []string{"(the arguments)=key a", "a=abc", "(the arguments)=key b", "b[0]=x", "b[1]=q", "b[3]=key c", `b[3].c="s`, // a cut in an escape cuts before it
		"(the arguments)=key d", "(the arguments)=key e"}
	if !slices.Equal(got, want) {
		t.Errorf("walk = %q, want %q", got, want)
	}
}

// Every rule of the embedded set compiles, with its allowlists: they are
// compiled on first use, where a broken one would panic.
func TestEveryRuleCompiles(t *testing.T) {
	rs := loadSecretRules()
	bounded := 0
	for _, r := range rs.rules {
		allows := len(r.allow)
		if r.compiled() == nil {
			t.Errorf("rule %s does not compile", r.id)
		}
		if len(r.allow) != allows { // a broken allowlist drops them all
			t.Errorf("rule %s: an allowlist does not compile", r.id)
		}
		if r.maxLen > 0 {
			bounded++
		}
	}
	// (96 of 216 in gitleaks v8.30.1: a bound narrows where a rule runs.)
	if len(rs.rules) < 150 || bounded < 50 {
		t.Errorf("%d rules, %d with a bounded match: the set did not load as it should", len(rs.rules), bounded)
	}
}
