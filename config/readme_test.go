package config

import (
	"os"
	"strings"
	"testing"
)

// The README's Configuration section names every field Warden's own file
// can hold, so a field added to the decoder cannot go undocumented.
func TestReadmeNamesEveryField(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Configuration\n")
	if !ok {
		t.Fatal(`the README has no "## Configuration" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	for _, fields := range [][]string{topFields, activityFields, tasksFields, toolSearchFields, serverFields, toolFields,
		sandboxFields, guardrailsFields, oauthFields, clientFields, profileFields, profileServer, accessFields, authFields, claimsFields} {
		for _, f := range fields {
			if !strings.Contains(section, "`"+f+"`") {
				t.Errorf("the README's Configuration section does not name the field %q", f)
			}
		}
	}
}
