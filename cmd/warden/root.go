package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/tailscale/hujson"
	"github.com/wardenmcp/warden/client"
	"github.com/wardenmcp/warden/config"
	"github.com/wardenmcp/warden/internal/display"
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

	configured *configured    // read by configuredDaemon()
	daemon     *client.Client // made by client()
	listenAt   string         // where that daemon listens, from its status
}

// configured is what the config file says of its daemon.
type configured struct {
	listen, stateDir string
}

func newRootCmd(g *globals) *cobra.Command {
	root := &cobra.Command{
		Use:   "warden",
		Short: "Warden: a local-first gateway for the Model Context Protocol",
		Long: `Warden connects to every MCP server you use, shows them to AI clients through
one endpoint, and holds anything a human has not approved in its current form.

Start the daemon with "warden serve"; the other commands talk to it.
Exit status: 0 done, 1 error, 2 usage, 3 done but something is still held
(review and tools: tools pending or changed; writes: writes latched;
approvals that leave tools held).`,
		Version:       build.String(),
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
		newDecisionsCmd(g),
		newVersionCmd(g),
		newImportCmd(g),
		newConnectCmd(g),
		newLogsCmd(g),
		newAuthCmd(g),
		newUICmd(g),
		newStoreCmd(g),
	)
	root.SetVersionTemplate("warden {{.Version}}\n")
	completeBashWithoutPackage(root)
	for _, c := range root.Commands() {
		strictArgs(c)
	}
	return root
}

// configFile is the config file the CLI uses, absolute.
func (g *globals) configFile() string {
	path := g.configPath
	if path == "" {
		path = config.DefaultPath()
	}
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return path
}

// configuredDaemon returns what the config file says of its daemon: its
// listen and stateDir ("" when it says none). It is read once, so that a
// warning is printed once. A file that cannot be read as a whole (a syntax
// error mid-edit) does not stop the CLI: the running daemon keeps its
// config and shows the error.
func (g *globals) configuredDaemon() configured {
	if g.configured == nil {
		g.configured = g.readConfigured()
	}
	return *g.configured
}

func (g *globals) readConfigured() *configured {
	path := g.configFile()
	cfg, err := config.LoadAll(path)
	if err == nil {
		return &configured{listen: cfg.Listen, stateDir: cfg.StateDir}
	}
	c := &configured{listen: config.DefaultListen}
	var min struct {
		Listen   string `json:"listen"`
		StateDir string `json:"stateDir"`
	}
	data, rerr := config.ReadFile(path)
	if rerr == nil {
		rerr = config.CheckBounds(path, data) // before the parser: see config.MaxDepth
	}
	var std []byte
	if rerr == nil {
		std, rerr = hujson.Standardize(data)
	}
	if rerr != nil || json.Unmarshal(std, &min) != nil {
		fmt.Fprintf(g.stderr, "warning: %v\nwarning: looking for the daemon in the default state dir\n", err)
		return c
	}
	fmt.Fprintf(g.stderr, "warning: %v\n", err)
	if min.Listen != "" {
		c.listen = min.Listen
	}
	if d := min.StateDir; d != "" {
		if rest, ok := strings.CutPrefix(d, "~/"); ok {
			home, _ := os.UserHomeDir()
			d = filepath.Join(home, rest)
		} else if !filepath.IsAbs(d) {
			d = filepath.Join(filepath.Dir(path), d)
		}
		c.stateDir = d
	}
	return c
}

// same reports whether a and b name the same file.
func same(a, b string) bool {
	fa, err1 := os.Stat(a)
	fb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(fa, fb)
}

// resolveStateDir resolves the state dir: --state-dir, $WARDEN_STATE_DIR,
// the config's stateDir, the XDG default. Nothing a running process wrote
// takes part: the daemon is found on the state dir's socket.
func (g *globals) resolveStateDir() string {
	if g.stateDir != "" {
		return g.stateDir
	}
	return state.Dir("", g.configuredDaemon().stateDir)
}

// client returns an API client for the daemon of the state dir, on its
// socket (it sends no token), once that daemon is known to read the config
// file this command was given: a command never acts on a daemon of another
// config.
func (g *globals) client() (*client.Client, error) {
	if g.daemon != nil {
		return g.daemon, nil
	}
	c := client.NewLocal(g.resolveStateDir())
	st, err := c.Status(context.Background())
	if err != nil {
		return nil, g.apiErr(err)
	}
	if !sameConfig(st.ConfigPath, g.configFile()) {
		return nil, &otherConfigError{stateDir: g.resolveStateDir(), theirs: st.ConfigPath, ours: g.configFile()}
	}
	g.daemon, g.listenAt = c, st.Listen
	return c, nil
}

// sameConfig reports whether the daemon's config path and this command's
// name one file (or, for a file not written yet, one path).
func sameConfig(theirs, ours string) bool {
	return same(theirs, ours) || filepath.Clean(theirs) == filepath.Clean(ours)
}

// otherConfigError: the daemon of the state dir reads another config file.
type otherConfigError struct{ stateDir, theirs, ours string }

func (e *otherConfigError) Error() string {
	return fmt.Sprintf("the warden with state dir %s reads %s, not %s: nothing done. Use --config %s to act on it, or give this config's daemon its own state dir (\"stateDir\" in the file, or --state-dir)",
		e.stateDir, e.theirs, e.ours, shellQuote(e.theirs))
}

// listen is the address MCP clients reach the daemon at: the running
// daemon's (which `serve --listen` may have changed), else the config's.
func (g *globals) listen() string {
	if _, err := g.client(); err == nil && g.listenAt != "" {
		return g.listenAt
	}
	return g.configuredDaemon().listen
}

// ask sends one request to the daemon and prints its answer: as JSON with
// --json, else as text writes it.
func ask[T any](g *globals, req func(*client.Client) (T, error), text func(T) error) error {
	return askHeld(g, req, text, nil)
}

// askHeld is ask for an answer that can show something held (tools waiting
// for review, latched writes): then it ends with exit status 3, whatever
// the output format, so scripts can tell.
func askHeld[T any](g *globals, req func(*client.Client) (T, error), text func(T) error, held func(T) bool) error {
	c, err := g.client()
	if err != nil {
		return err
	}
	v, err := req(c)
	if err != nil {
		return g.apiErr(err)
	}
	if g.jsonOut {
		err = g.printJSON(v)
	} else {
		err = text(v)
	}
	if err == nil && held != nil && held(v) {
		return errHeld
	}
	return err
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
	var ce *client.ConnError
	if errors.As(err, &ce) {
		return &noDaemonError{stateDir: g.resolveStateDir(), serve: g.serveCommand(), detail: err.Error()}
	}
	return err
}

// noDaemonError: no daemon answers on the state dir's socket.
type noDaemonError struct{ stateDir, serve, detail string }

func (e *noDaemonError) Error() string {
	return fmt.Sprintf("no warden is running with state dir %s (%s); start it with: %s (or point --state-dir or $WARDEN_STATE_DIR at the running daemon's state dir)", e.stateDir, e.detail, e.serve)
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
	var buf bytes.Buffer
	if raw, ok := v.(json.RawMessage); ok {
		if err := json.Indent(&buf, raw, "", "  "); err != nil {
			return err
		}
		buf.WriteByte('\n')
	} else {
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(v); err != nil {
			return err
		}
	}
	_, err := g.stdout.Write(display.JSON(buf.Bytes())) // server strings: nothing hidden
	return err
}
