package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newUICmd(g *globals) *cobra.Command {
	var noBrowser bool
	cmd := &cobra.Command{
		Use:   "ui",
		Short: "Print a one-time login link to the review page in the browser, and open it",
		Long: `Print a link to the daemon's review page (/ui/) that logs one browser in,
once, within five minutes, and open it in the browser unless --no-browser.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			l, err := c.UILogin(cmd.Context())
			if err != nil {
				return g.apiErr(err)
			}
			link := baseURL(g.listen()) + l.Path
			fmt.Fprintln(g.stderr, "Open this link in a browser on this machine; it logs one browser in, once:")
			fmt.Fprintln(g.stdout, link)
			if !noBrowser {
				if err := openBrowser(link); err != nil {
					fmt.Fprintf(g.stderr, "(could not open a browser: %v; open the link yourself)\n", err)
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&noBrowser, "no-browser", false, "print the link only; do not open a browser")
	return cmd
}
