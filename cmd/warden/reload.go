package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/wardenmcp/warden/client"
)

// reloadWait bounds the wait for the daemon to reload after an edit of its
// config file; it watches the file and reloads within a fraction of a
// second.
const reloadWait = 10 * time.Second

// afterReload runs edit, a change to the config file, and says whether the
// running daemon took it. It subscribes to the daemon's events before the
// edit, so the reload the edit causes cannot be missed. It returns edit's
// error; when the daemon refused the file, or did not load one of servers,
// it calls refused with an error saying why.
func (g *globals) afterReload(ctx context.Context, servers []string, edit func() error, refused func(error)) error {
	ctx, cancel := context.WithTimeout(ctx, reloadWait)
	defer cancel()
	c, err := g.client()
	var stream *client.EventStream
	if err == nil {
		if stream, err = c.Events(ctx); err == nil {
			defer stream.Close()
		}
	}
	if err := edit(); err != nil {
		return err
	}
	if err != nil {
		var nd *noDaemonError
		var oc *otherConfigError
		switch {
		case errors.As(err, &nd):
			fmt.Fprintf(g.stdout, "no warden is running with state dir %s; it loads the change when started with: %s\n", nd.stateDir, nd.serve)
		case errors.As(err, &oc):
			fmt.Fprintf(g.stdout, "the warden with state dir %s reads %s, not this file: it does not see the change\n", oc.stateDir, oc.theirs)
		default:
			fmt.Fprintf(g.stdout, "not checked whether a running warden took the change: %v\n", g.apiErr(err))
		}
		return nil
	}
	for {
		ev, err := stream.Next()
		if err != nil {
			fmt.Fprintf(g.stdout, "the warden with state dir %s did not reload within %s; see its log, or send it SIGHUP\n", g.resolveStateDir(), reloadWait)
			return nil
		}
		if ev.Type != "config" {
			continue
		}
		data, _ := ev.Data.(map[string]any)
		if data["result"] == "settling" {
			fmt.Fprintln(g.stdout, "the change stops every server: the running warden applies it once the file has stayed the same for a second")
			continue
		}
		if data["result"] == "refused" {
			refused(fmt.Errorf("the running warden refused the file and keeps its previous config: %v", data["error"]))
			return nil
		}
		var why []string
		for _, server := range servers {
			if msg, ok := data["error."+server].(string); ok {
				why = append(why, fmt.Sprintf("the running warden did not load %s: %s\nfix the entry in %s, or remove it with: warden servers remove %s", server, msg, g.configFile(), server))
			}
		}
		if len(why) > 0 {
			refused(errors.New(strings.Join(why, "\n")))
			return nil
		}
		fmt.Fprintln(g.stdout, "the running warden loaded the change")
		return nil
	}
}
