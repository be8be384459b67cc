package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// Every command's argument errors say what is wrong in the command's own
// words: the missing argument by its name, the usage line and an example
// that fills the arguments in, and exit 2; never cobra's "requires at least
// 1 arg(s)". Each command's usage line agrees with what it accepts.
func TestArgErrorsNameAnExample(t *testing.T) {
	var walk func(c *cobra.Command)
	seen := 0
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if !sub.IsAvailableCommand() {
				continue
			}
			seen++
			checkArgErrors(t, sub)
			walk(sub)
		}
	}
	walk(newRootCmd(&globals{}))
	if seen < 30 {
		t.Fatalf("walked %d commands; the tree is larger", seen)
	}
}

func checkArgErrors(t *testing.T, cmd *cobra.Command) {
	t.Helper()
	path := strings.Fields(cmd.CommandPath())[1:] // without "warden"
	pos := positionals(cmd.Use)
	fill := func(n int) []string {
		args := make([]string, n)
		for i := range args {
			args[i] = "a"
		}
		return args
	}
	if cmd.Args(cmd, fill(len(pos.required))) != nil && !cmd.HasSubCommands() {
		t.Errorf("%s: its usage line names %d argument(s), %v, but it refuses that many", cmd.CommandPath(), len(pos.required), pos.required)
	}
	var wrong [][]string
	if len(pos.required) > 0 {
		wrong = append(wrong, nil)
	}
	if pos.takes >= 0 {
		wrong = append(wrong, fill(pos.takes+1))
	}
	for _, args := range wrong {
		code, _, stderr := runCLI(t, "", append(append([]string{}, path...), args...)...)
		name := cmd.CommandPath() + " " + strings.Join(args, " ")
		if code != exitUsage || strings.Contains(stderr, "arg(s)") || !strings.Contains(stderr, "usage: "+cmd.UseLine()) {
			t.Errorf("%s: exit %d, want %d with the usage line; stderr:\n%s", name, code, exitUsage, stderr)
			continue
		}
		if len(args) < len(pos.required) && !strings.Contains(stderr, "needs "+pos.required[0]) {
			t.Errorf("%s: does not name the missing %s:\n%s", name, pos.required[0], stderr)
		}
		_, ex, _ := strings.Cut(stderr, "\nexample: ")
		ex, _, _ = strings.Cut(ex, "\n")
		words := strings.Fields(ex)
		if !strings.HasPrefix(ex, "warden ") || len(words) < len(strings.Fields(cmd.CommandPath()))+len(pos.required) {
			t.Errorf("%s: no example that fills in %v:\n%s", name, pos.required, stderr)
		}
		for _, w := range words {
			if argName.MatchString(w) {
				t.Errorf("%s: the example %q leaves %s to fill in", name, ex, w)
			}
		}
	}
}

func TestPositionals(t *testing.T) {
	for _, c := range []struct {
		use           string
		required, all string
		takes         int
	}{
		{"tools SERVER", "SERVER", "SERVER", 1},
		{"status", "", "", 0},
		{"review [SERVER] [--diff]", "", "SERVER", 1},
		{"block SERVER TOOL...", "SERVER TOOL...", "SERVER TOOL...", -1},
		{"logs SERVER [-f] [-n LINES]", "SERVER", "SERVER", 1},
		{"stdio [--server NAME]", "", "", 0},
		{"import [FILE | --from HOST]", "", "FILE", 1},
		{"add NAME (--url URL [--header K=V]... | -- COMMAND ARGS...) [--on-demand [--idle-timeout D]]", "NAME", "NAME", -1},
	} {
		u := positionals(c.use)
		if strings.Join(u.required, " ") != c.required || strings.Join(u.all, " ") != c.all || u.takes != c.takes {
			t.Errorf("%q: %+v", c.use, u)
		}
	}
}
