package main

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/spf13/cobra"
)

// strictArgs makes every argument error of c and its subcommands a usage
// error (exit 2) that says what is wrong in the command's own words (see
// argsError). A command that does not say which arguments it takes takes
// none when it has subcommands (so a mistyped subcommand is an error, not
// an argument), and any otherwise.
func strictArgs(c *cobra.Command) {
	check := c.Args
	if check == nil {
		check = cobra.ArbitraryArgs
		if c.HasSubCommands() {
			check = cobra.NoArgs
		}
	}
	c.Args = func(cmd *cobra.Command, args []string) error {
		if check(cmd, args) != nil {
			return argsError(cmd, args)
		}
		return nil
	}
	if !c.Runnable() {
		// Cobra shows a command that does nothing itself its help, without
		// checking its arguments: "warden auth bogus" would say nothing.
		c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
	}
	for _, sub := range c.Commands() {
		strictArgs(sub)
	}
}

// argsError says what is wrong with args, given to cmd: which arguments are
// missing, by the names its usage line gives them, or which it does not
// take; then the usage line and an example (cobra's own "requires at least
// 1 arg(s)" names neither).
func argsError(cmd *cobra.Command, args []string) error {
	pos := positionals(cmd.Use)
	var what string
	switch {
	case len(args) < len(pos.required):
		what = fmt.Sprintf("%s needs %s", cmd.CommandPath(), strings.Join(pos.required[len(args):], " "))
	case cmd.HasSubCommands():
		var names []string
		for _, sub := range cmd.Commands() {
			if sub.IsAvailableCommand() {
				names = append(names, sub.Name())
			}
		}
		what = fmt.Sprintf("%s has no command %q; its commands: %s", cmd.CommandPath(), args[0], strings.Join(names, ", "))
	case pos.takes == 0:
		what = fmt.Sprintf("%s takes no arguments, not %s", cmd.CommandPath(), quoted(args))
	default:
		what = fmt.Sprintf("%s takes at most %d argument(s) (%s), not also %s", cmd.CommandPath(), pos.takes, strings.Join(pos.all, " "), quoted(args[min(pos.takes, len(args)):]))
	}
	return usageErrorf("%s\nusage: %s\nexample: %s", what, cmd.UseLine(), example(cmd))
}

// example is the first of cmd's examples; a command that names no
// arguments is its own example.
func example(cmd *cobra.Command) string {
	first, _, _ := strings.Cut(strings.TrimSpace(cmd.Example), "\n")
	if first != "" {
		return first
	}
	if cmd.HasSubCommands() {
		for _, sub := range cmd.Commands() {
			if sub.IsAvailableCommand() {
				return example(sub)
			}
		}
	}
	return cmd.CommandPath()
}

func quoted(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = fmt.Sprintf("%q", a)
	}
	return strings.Join(q, " ")
}

// usageArgs are the arguments a usage line names: required ones in order,
// then all (with the optional ones, in brackets); takes is how many it
// takes at most, -1 for no limit (a name ending in "...", or a command
// after "--").
type usageArgs struct {
	required, all []string
	takes         int
}

// argName is how a usage line writes an argument: SERVER, TOOL...
var argName = regexp.MustCompile(`^[A-Z][A-Z0-9_]*(\.\.\.)?$`)

// positionals reads the arguments a usage line ("block SERVER TOOL...",
// "status [SERVER]") names. A name right after a flag is the flag's value,
// and what follows "--" or stands in parentheses is a form of its own
// (servers add's command), not an argument.
func positionals(use string) usageArgs {
	var u usageArgs
	depth, paren := 0, 0
	afterFlag, dash := false, false
	for _, tok := range strings.Fields(use)[1:] {
		dash = dash || tok == "--"
		opens, closes := strings.Count(tok, "[")+strings.Count(tok, "("), strings.Count(tok, "]")+strings.Count(tok, ")")
		paren += strings.Count(tok, "(")
		name := strings.Trim(tok, "[]()|")
		if !afterFlag && paren == 0 && argName.MatchString(name) {
			u.all = append(u.all, name)
			if depth+opens == 0 {
				u.required = append(u.required, name)
			}
		}
		afterFlag = strings.HasPrefix(name, "-") && name != "--"
		depth += opens - closes
		paren -= strings.Count(tok, ")")
	}
	u.takes = len(u.all)
	if n := len(u.all); dash || n > 0 && strings.HasSuffix(u.all[n-1], "...") {
		u.takes = -1
	}
	return u
}
