package main

import (
	"context"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/wardenmcp/warden/api"
	"github.com/wardenmcp/warden/approval"
	"github.com/wardenmcp/warden/client"
)

// completionTimeout bounds the daemon's answer to a completion: a shell
// waiting on a daemon that hangs is worse than no names.
const completionTimeout = 2 * time.Second

// toolFilter picks the tools a command's completion offers.
type toolFilter func(api.Tool) bool

// presentTool: a tool the daemon has now, by a name a shell can take.
func presentTool(t api.Tool) bool { return t.Present && t.Status != approval.StatusInvalid }

// completeArgs completes a command whose first argument is a server and
// whose further ones (up to maxTools of them) are tools of that server.
func (g *globals) completeArgs(maxTools int, tools toolFilter) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) == 0 {
			return g.serverNames(cmd)
		}
		if len(args) > maxTools {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return g.toolNames(cmd, args[0], args[1:], tools)
	}
}

// completeFlagTools completes a flag that takes tools of the server named
// first, leaving out those already given (the flag takes T1,T2,...).
func (g *globals) completeFlagTools(tools toolFilter) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) == 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		i := strings.LastIndex(toComplete, ",")
		given := strings.Split(toComplete[:i+1], ",")
		names, dir := g.toolNames(cmd, args[0], given, tools)
		for j := range names {
			names[j] = toComplete[:i+1] + names[j]
		}
		return names, dir | cobra.ShellCompDirectiveNoSpace
	}
}

// completeServerFlag completes a flag that takes a server name.
func (g *globals) completeServerFlag(cmd *cobra.Command, _ []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return g.serverNames(cmd)
}

// serverNames asks the running daemon for its servers' names; with no
// daemon to ask, there is nothing to offer (and no file names either).
func (g *globals) serverNames(cmd *cobra.Command) ([]cobra.Completion, cobra.ShellCompDirective) {
	c, err := g.quietClient()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), completionTimeout)
	defer cancel()
	servers, err := c.Servers(ctx)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []cobra.Completion
	for _, s := range servers {
		out = append(out, s.Name)
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// toolNames asks the running daemon for the tools of server that pick
// accepts, leaving out those in given.
func (g *globals) toolNames(cmd *cobra.Command, server string, given []string, pick toolFilter) ([]cobra.Completion, cobra.ShellCompDirective) {
	c, err := g.quietClient()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), completionTimeout)
	defer cancel()
	tools, err := c.ToolStates(ctx, server)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	sortTools(tools)
	var out []cobra.Completion
	for _, t := range tools {
		if pick(t) && !slices.Contains(given, t.Name) {
			out = append(out, t.Name)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// quietClient is client without warnings: a completion's output is the
// shell's to read.
func (g *globals) quietClient() (*client.Client, error) {
	g.stderr = io.Discard
	return g.client()
}

// bashStandIn stands in for the one function of the bash-completion package
// that cobra's bash script calls (to split the command line into words),
// where that package is not loaded: it takes bash's own COMP_WORDS,
// rejoining a "--flag=value" that bash split at the "=".
const bashStandIn = `
# Without the bash-completion package: a stand-in for the one function of it
# that the script above calls. (With the package, its own is used.)
if ! declare -F _get_comp_words_by_ref >/dev/null 2>&1; then
_get_comp_words_by_ref() {
    local i
    words=()
    for ((i = 0; i <= COMP_CWORD; i++)); do
        if ((i > 1)) && [[ ${COMP_WORDS[i]} == "=" || ${COMP_WORDS[i-1]} == "=" ]]; then
            words[${#words[@]}-1]+=${COMP_WORDS[i]}
        else
            words+=("${COMP_WORDS[i]}")
        fi
    done
    cword=$((${#words[@]} - 1))
    cur=${words[cword]}
    prev=${words[cword-1]}
}
fi
`

// completeBashWithoutPackage makes "warden completion bash" write a script
// that also works without the bash-completion package.
func completeBashWithoutPackage(root *cobra.Command) {
	root.InitDefaultCompletionCmd()
	bash, _, err := root.Find([]string{"completion", "bash"})
	if err != nil || bash.Name() != "bash" {
		return
	}
	bash.Long = `Generate the autocompletion script for bash. It completes commands, flags,
and the names of the running daemon's servers and tools, with or without the
bash-completion package.

To load completions in your current shell session:

	source <(warden completion bash)

To load them in every new session, add that line to ~/.bashrc.
`
	bash.RunE = func(cmd *cobra.Command, _ []string) error {
		noDesc, _ := cmd.Flags().GetBool("no-descriptions")
		out := cmd.OutOrStdout()
		if err := cmd.Root().GenBashCompletionV2(out, !noDesc); err != nil {
			return err
		}
		_, err := io.WriteString(out, bashStandIn)
		return err
	}
}
