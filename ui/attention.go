package ui

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/wardenmcp/warden/api"
	"github.com/wardenmcp/warden/internal/display"
	"github.com/wardenmcp/warden/writes"
)

// rank orders what waits for a person: what harms agents' work now first,
// then what may be an attack, what is broken, and what is merely new.
type rank int

const (
	rankLatched rank = iota // agents' writes are refused until someone checks upstream
	rankChanged             // an approved definition changed: a possible rug pull
	rankBroken              // the server does not run: its config entry or its connection
	rankNew                 // new: a quarantined server, pending tools
	ranks
)

// rankLabels name each rank in the overview's summary, by rank.
var rankLabels = [ranks]string{"with latched writes", "with changed tools", "not running", "waiting for review"}

// need is one reason a server waits for a person: What in a few words,
// Why in a sentence saying what to do (server strings escaped).
type need struct {
	Rank rank
	What string
	Why  string
}

// serverRow is one server on the overview with its latched writes and
// what it needs, most urgent first.
type serverRow struct {
	api.Server
	Latches []writes.Latch
	Needs   []need
}

// loaded reports whether a server's config entry ever loaded: one that did
// not has no connection and no tools to decide about.
func loaded(s api.Server) bool { return s.Transport != "" }

// seen reports whether Warden has listed a server's tools (or it is
// connected and has none): only then is admitting it a decision about
// something a person has seen.
func seen(s api.Server) bool {
	c := s.Tools
	return s.State.State == "ready" || c.Pending+c.Approved+c.Changed+c.Blocked+c.Invalid+c.Absent > 0
}

// tally is one line of the overview's summary.
type tally struct {
	Label string
	Count int
}

// triage builds the overview's rows, those that need a person first (by
// their most urgent need, then name), and the summary counts by rank.
func triage(servers []api.Server, latches []writes.Latch) ([]serverRow, []tally) {
	rows := make([]serverRow, 0, len(servers))
	for _, s := range servers {
		ls := slices.DeleteFunc(slices.Clone(latches), func(l writes.Latch) bool { return l.Server != s.Name })
		rows = append(rows, serverRow{Server: s, Latches: ls, Needs: needs(s, ls)})
	}
	first := func(r serverRow) rank {
		if len(r.Needs) == 0 {
			return ranks
		}
		return r.Needs[0].Rank
	}
	slices.SortStableFunc(rows, func(a, b serverRow) int {
		return cmp.Or(cmp.Compare(first(a), first(b)), cmp.Compare(a.Name, b.Name))
	})
	var counts [ranks]int
	for _, r := range rows {
		if k := first(r); k < ranks {
			counts[k]++
		}
	}
	var sum []tally
	for k, n := range counts {
		if n > 0 {
			sum = append(sum, tally{rankLabels[k], n})
		}
	}
	return rows, sum
}

// needs says what s waits for, most urgent first.
func needs(s api.Server, latches []writes.Latch) []need {
	var out []need
	if n := len(latches); n > 0 {
		out = append(out, need{rankLatched, fmt.Sprintf("%d latched write(s)", n),
			fmt.Sprintf("agents' writes to it are refused: check upstream whether %s happened, then clear the latch", display.Escape(latches[0].Tool))})
	}
	if n := s.Tools.Changed; n > 0 {
		out = append(out, need{rankChanged, fmt.Sprintf("%d changed tool(s)", n),
			"approved tools whose definitions changed since: held until you compare and approve them again"})
	}
	out = append(out, running(s)...)
	if s.Quarantined && seen(s) {
		out = append(out, need{rankNew, "quarantined", "none of its tools are listed or run until you review and admit it"})
	}
	if n := s.Tools.Undecided(); n > 0 {
		out = append(out, need{rankNew, fmt.Sprintf("%d pending tool(s)", n), "new tools: not listed or run until you approve them"})
	}
	return out
}

// running says what keeps s from running: its config entry or its
// connection. A disabled server is stopped on purpose.
func running(s api.Server) []need {
	switch {
	case !loaded(s):
		return []need{{rankBroken, "config entry not loaded", display.Text(s.ConfigError) + fixEntry}}
	case s.ConfigError != "":
		return []need{{rankBroken, "config entry has an error", display.Text(s.ConfigError) + fixEntry}}
	case s.Disabled:
		return nil
	case s.State.State == "backoff":
		why := fmt.Sprintf("%s (%d failed attempt(s)", display.Text(s.State.Error), s.State.Failures)
		if !s.State.RetryAt.IsZero() {
			why += "; next at " + stamp(s.State.RetryAt)
		}
		return []need{{rankBroken, "cannot connect", why + ")"}}
	case s.State.State == "needs_login":
		return []need{{rankBroken, "needs a login", "its authorization server wants a person: run warden auth login " + s.Name}}
	}
	return nil
}

// fixEntry says how a config entry's error is fixed.
const fixEntry = ". Fix the entry in the config file: Warden reloads the file when it is saved."
