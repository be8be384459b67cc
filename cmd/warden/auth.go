package main

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/wardenmcp/warden/api"
	"github.com/wardenmcp/warden/client"
	"github.com/wardenmcp/warden/config"
	"github.com/wardenmcp/warden/internal/display"
	"github.com/wardenmcp/warden/oauth"
)

func newAuthCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "auth",
		Short: "Authorize Warden to HTTP servers that require OAuth (log in, status, log out)",
	}
	var noBrowser bool
	login := &cobra.Command{
		Use:     "login SERVER",
		Example: "  warden auth login remote",
		Short:   "Log in to SERVER's authorization server in a browser; waits until Warden holds a token",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return authLogin(cmd.Context(), g, args[0], noBrowser)
		},
	}
	login.Flags().BoolVar(&noBrowser, "no-browser", false, "print the URL only; do not open a browser")
	cmd.AddCommand(login,
		&cobra.Command{
			Use:   "status [SERVER]",
			Short: "Whether Warden is authorized to each HTTP server",
			Args:  cobra.MaximumNArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				return authStatus(cmd.Context(), g, args)
			},
		},
		&cobra.Command{
			Use:     "logout SERVER",
			Example: "  warden auth logout remote",
			Short:   "Revoke SERVER's tokens where it supports that, and forget them",
			Args:    cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				logout := func(c *client.Client) (*api.AuthLogout, error) { return c.AuthLogout(cmd.Context(), args[0]) }
				return ask(g, logout, func(res *api.AuthLogout) error {
					how := "the authorization server offers no revocation, or refused it; the tokens are forgotten"
					if res.Revoked {
						how = "tokens revoked and forgotten"
					}
					fmt.Fprintf(g.stdout, "logged out of %s: %s; log in again with: warden auth login %s\n", args[0], how, args[0])
					return nil
				})
			},
		},
	)
	return cmd
}

func authLogin(ctx context.Context, g *globals, server string, noBrowser bool) error {
	c, err := g.client()
	if err != nil {
		return err
	}
	started, err := c.AuthLogin(ctx, server)
	if err != nil {
		return g.apiErr(err)
	}
	fmt.Fprintf(g.stderr, "Open this URL in a browser to authorize Warden to %s:\n", server)
	fmt.Fprintln(g.stdout, display.Escape(started.AuthorizationURL)) // built from the server's metadata
	if !noBrowser {
		if err := openBrowser(started.AuthorizationURL); err != nil {
			fmt.Fprintf(g.stderr, "(could not open a browser: %v; open the URL yourself)\n", err)
		}
	}
	fmt.Fprintln(g.stderr, "Waiting for the authorization server to send you back to Warden...")
	// The person takes their time; the daemon ends the login after 10 minutes.
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		info, err := c.AuthStatus(ctx, server)
		if err != nil {
			return g.apiErr(err)
		}
		l := info.Login
		switch {
		case l == nil || l.ID != started.ID:
			return fmt.Errorf("another login to %s replaced this one", server)
		case l.State == oauth.LoginFailed:
			return errors.New(l.Error)
		case l.State == oauth.LoginDone:
			fmt.Fprintf(g.stdout, "authorized: Warden can reach %s (scopes: %s)\n", server, display.Escape(orNone(info.Scopes)))
			return nil
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none asked"
	}
	return strings.Join(s, " ")
}

func authStatus(ctx context.Context, g *globals, args []string) error {
	c, err := g.client()
	if err != nil {
		return err
	}
	names := args
	if len(names) == 0 {
		servers, err := c.Servers(ctx)
		if err != nil {
			return g.apiErr(err)
		}
		for _, s := range servers {
			if s.Transport != config.TransportStdio && !s.Disabled {
				names = append(names, s.Name)
			}
		}
	}
	infos := []*oauth.Info{}
	for _, n := range names {
		info, err := c.AuthStatus(ctx, n)
		if err != nil {
			return g.apiErr(err)
		}
		infos = append(infos, info)
	}
	if g.jsonOut {
		return g.printJSON(infos)
	}
	if len(infos) == 0 {
		fmt.Fprintln(g.stdout, "no HTTP servers configured")
		return nil
	}
	t := newTable(g.stdout, "SERVER", "STATE", "ISSUER", "SCOPES", "EXPIRES", "REFRESHABLE")
	need := false
	for _, i := range infos {
		exp := "-"
		if i.ExpiresAt != nil {
			exp = stamp(*i.ExpiresAt)
		}
		t.row(i.Server, i.State, i.Issuer, strings.Join(i.Scopes, " "), exp, fmt.Sprint(i.Refreshable))
		need = need || i.State == oauth.StateNeedsLogin
	}
	t.flush()
	if need {
		fmt.Fprintln(g.stdout, "\nservers in needs_login refuse calls until you run: warden auth login SERVER")
	}
	return nil
}

// openBrowser opens u in the person's browser.
func openBrowser(u string) error {
	name := "xdg-open"
	if runtime.GOOS == "darwin" {
		name = "open"
	}
	cmd := exec.Command(name, u)
	if err := cmd.Start(); err != nil {
		return err
	}
	go cmd.Wait()
	return nil
}
