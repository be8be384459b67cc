package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/tailscale/hujson"
	"github.com/wardenmcp/warden/client"
	"github.com/wardenmcp/warden/config"
	"github.com/wardenmcp/warden/internal/state"
)

// globals holds the global flags and what commands share. Commands get the
// loaded config, state dir, token and API client through its methods.
type globals struct {
	configPath string // --config; "" means config.DefaultPath()
	stateDir   string // --state-dir; "" resolves the usual way
	jsonOut    bool   // --json: read commands print the API's JSON

	stdin          io.Reader
	stdout, stderr io.Writer

	cfg    *config.Config // loaded by config()
	cfgErr error
	ep     *endpoint // read by endpoint()
}

// endpoint is where the daemon is, as the config says.
type endpoint struct {
	listen, stateDir string
	err              error
}

func newRootCmd(g *globals) *cobra.Command {
	root := &cobra.Command{
		Use:   "warden",
		Short: "Warden: a local-first gateway for the Model Context Protocol",
		Long: `Warden connects to every MCP server you use, shows them to AI clients through
one endpoint, and holds anything a human has not approved in its current form.

Start the daemon with "warden serve"; the other commands talk to it.
Exit status: 0 done, 1 error, 2 usage, 3 done but something is still held.`,
		SilenceErrors: true,
		SilenceUsage:  true,
		RunE: func(cmd *cobra.Command, args []string) error {
			cmd.SetOut(g.stderr)
			_ = cmd.Usage()
			return usageErrorf("name a command")
		},
	}
	pf := root.PersistentFlags()
	pf.StringVar(&g.configPath, "config", "", "config file (default $WARDEN_CONFIG, else $XDG_CONFIG_HOME/warden/config.json)")
	pf.StringVar(&g.stateDir, "state-dir", "", "state dir (default $WARDEN_STATE_DIR, else the config's stateDir, else $XDG_STATE_HOME/warden)")
	pf.BoolVar(&g.jsonOut, "json", false, "print the API's JSON (read commands)")
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		if cmd.Name() == "add" && strings.HasPrefix(err.Error(), "unknown") {
			// Most often the stdio server's own flags: `servers add m npx -y pkg`.
			err = fmt.Errorf("%w; put the server's command after --, as in: warden servers add NAME -- COMMAND ARGS...", err)
		}
		return usageError(err)
	})

	root.AddCommand(
		newServeCmd(g),
		newStdioCmd(g),
		newStatusCmd(g),
		newServersCmd(g),
		newToolsCmd(g),
		newReviewCmd(g),
		newWritesCmd(g),
		newSessionsCmd(g),
		newCallCmd(g),
		newActivityCmd(g),
		newAuthCmd(g),
	)
	for _, c := range root.Commands() {
		strictArgs(c)
	}
	return root
}

// strictArgs makes every argument error of c and its subcommands a usage
// error (exit 2). A command that does not say which arguments it takes
// takes none when it has subcommands (so a mistyped subcommand is an error,
// not an argument), and any otherwise.
func strictArgs(c *cobra.Command) {
	check := c.Args
	if check == nil {
		check = cobra.ArbitraryArgs
		if c.HasSubCommands() {
			check = cobra.NoArgs
		}
	}
	c.Args = func(cmd *cobra.Command, args []string) error { return usageError(check(cmd, args)) }
	for _, sub := range c.Commands() {
		strictArgs(sub)
	}
}

// configFile is the config file the CLI uses.
func (g *globals) configFile() string {
	if g.configPath != "" {
		return g.configPath
	}
	return config.DefaultPath()
}

// loadConfig loads the config file (once), strictly.
func (g *globals) loadConfig() (*config.Config, error) {
	if g.cfg == nil && g.cfgErr == nil {
		g.cfg, g.cfgErr = config.Load(g.configPath)
	}
	return g.cfg, g.cfgErr
}

// endpoint returns the daemon's listen address and configured state dir.
// A config that fails validation (a server's ${env:} variable not set in
// this shell, an edit in progress) still tells the CLI where the daemon is,
// and the daemon keeps its running config anyway, so that is not fatal here.
func (g *globals) endpoint() (listen, stateDir string, err error) {
	if g.ep == nil { // once: a warning is printed once
		g.ep = &endpoint{}
		g.ep.listen, g.ep.stateDir, g.ep.err = g.readEndpoint()
	}
	return g.ep.listen, g.ep.stateDir, g.ep.err
}

func (g *globals) readEndpoint() (listen, stateDir string, err error) {
	cfg, err := g.loadConfig()
	if err == nil {
		return cfg.Listen, cfg.StateDir, nil
	}
	path := g.configFile()
	data, rerr := os.ReadFile(path)
	if rerr != nil {
		return "", "", err
	}
	std, serr := hujson.Standardize(data)
	var min struct {
		Listen   string `json:"listen"`
		StateDir string `json:"stateDir"`
	}
	if serr != nil || json.Unmarshal(std, &min) != nil {
		return "", "", err
	}
	if !strings.Contains(err.Error(), "which is not set") {
		fmt.Fprintf(g.stderr, "warning: %v\n", err)
	}
	if min.Listen == "" {
		min.Listen = config.DefaultListen
	}
	if d := min.StateDir; d != "" {
		if rest, ok := strings.CutPrefix(d, "~/"); ok {
			home, _ := os.UserHomeDir()
			d = filepath.Join(home, rest)
		} else if !filepath.IsAbs(d) {
			d = filepath.Join(filepath.Dir(path), d)
		}
		min.StateDir = d
	}
	return min.Listen, min.StateDir, nil
}

// resolveStateDir resolves the state dir: --state-dir, $WARDEN_STATE_DIR,
// the config's stateDir, the XDG default.
func (g *globals) resolveStateDir() (string, error) {
	if g.stateDir != "" {
		return g.stateDir, nil
	}
	_, dir, err := g.endpoint()
	if err != nil && os.Getenv("WARDEN_STATE_DIR") == "" {
		return "", err
	}
	return state.Dir("", dir), nil
}

// token reads the operator token from the state dir.
func (g *globals) token() (string, error) {
	dir, err := g.resolveStateDir()
	if err != nil {
		return "", err
	}
	tok, err := state.ReadToken(dir)
	if err == nil {
		return tok, nil
	}
	file := filepath.Join(dir, state.TokenFile)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("no operator token at %s: start the daemon once with %q to create it (or point --state-dir or $WARDEN_STATE_DIR at the daemon's state dir)", file, g.serveCommand())
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return "", fmt.Errorf("cannot read the operator token %s: %v (it belongs to the user who runs \"warden serve\")", file, pe.Err)
	}
	return "", err
}

// client returns an API client for the daemon the config names.
func (g *globals) client() (*client.Client, error) {
	listen, _, err := g.endpoint()
	if err != nil {
		return nil, err
	}
	tok, err := g.token()
	if err != nil {
		return nil, err
	}
	return client.New(baseURL(listen), tok), nil
}

// ask sends one request to the daemon and prints its answer: as JSON with
// --json, else as text writes it.
func ask[T any](g *globals, req func(*client.Client) (T, error), text func(T) error) error {
	c, err := g.client()
	if err != nil {
		return err
	}
	v, err := req(c)
	if err != nil {
		return g.apiErr(err)
	}
	if g.jsonOut {
		return g.printJSON(v)
	}
	return text(v)
}

// baseURL is the URL that reaches a daemon listening on listen: a wildcard
// host is reached on loopback.
func baseURL(listen string) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "http://" + listen
	}
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// apiErr makes an error answer of the API actionable for a CLI user.
func (g *globals) apiErr(err error) error {
	var ae *client.APIError
	if errors.As(err, &ae) && ae.Code == "unauthorized" {
		dir, _ := g.resolveStateDir()
		return fmt.Errorf("the daemon refused the token in %s: is it running with another state dir? Use the same --state-dir or $WARDEN_STATE_DIR as \"warden serve\"", filepath.Join(dir, state.TokenFile))
	}
	return err
}

// serveCommand is the command that starts the daemon this one talks to.
func (g *globals) serveCommand() string {
	cmd := "warden serve"
	if g.configPath != "" {
		cmd += " --config " + shellQuote(g.configPath)
	}
	if g.stateDir != "" {
		cmd += " --state-dir " + shellQuote(g.stateDir)
	}
	return cmd
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:@%+,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// printJSON writes v as indented JSON: what --json prints.
func (g *globals) printJSON(v any) error {
	if raw, ok := v.(json.RawMessage); ok {
		var buf bytes.Buffer
		if err := json.Indent(&buf, raw, "", "  "); err != nil {
			return err
		}
		buf.WriteByte('\n')
		_, err := g.stdout.Write(buf.Bytes())
		return err
	}
	enc := json.NewEncoder(g.stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
