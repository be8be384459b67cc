// Command warden is the Warden MCP gateway: the daemon ("warden serve"), the
// stdio bridge ("warden stdio") and the operator CLI that talks to the
// daemon's REST API.
//
// Exit status: 0 done, 1 error, 2 usage, 3 done but something is still held
// (tools pending or changed, writes latched).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/wardenmcp/warden/client"
	"github.com/wardenmcp/warden/internal/display"
)

// Exit statuses.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
	exitHeld    = 3
)

// version is the build's version when set with -ldflags "-X
// main.version=..."; otherwise the build info tells (see build).
var version string

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes the CLI with args and returns the exit status.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	g := &globals{stdin: stdin, stdout: stdout, stderr: stderr}
	root := newRootCmd(g)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if ce := (*client.ConnError)(nil); errors.As(err, &ce) {
		err = g.apiErr(err)
	}
	return report(cmd, err, stderr)
}

// exitError ends the command with a status. A nil err means it has been
// reported already (a warning, a refusal's text).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// usageErrorf is a mistake in the command line: exit status 2.
func usageErrorf(format string, a ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, a...)}
}

func usageError(err error) error {
	var ee *exitError
	if err == nil || errors.As(err, &ee) {
		return err
	}
	return &exitError{code: exitUsage, err: err}
}

// errHeld ends a command that did its work but left something held.
var errHeld = &exitError{code: exitHeld}

// errReported ends a command that failed and already said why.
var errReported = &exitError{code: exitFailure}

// report prints err (if not yet reported) and maps it to an exit status.
func report(cmd *cobra.Command, err error, stderr io.Writer) int {
	if err == nil {
		return exitOK
	}
	code := exitFailure
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
		err = ee.err
	} else if strings.HasPrefix(err.Error(), "unknown command ") {
		code = exitUsage // cobra's own check of the root command's arguments
	}
	if err == nil {
		return code
	}
	fmt.Fprintf(stderr, "warden: %s\n", display.Text(err.Error())) // it may quote a server
	if code == exitUsage && cmd != nil {
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
	}
	return code
}
