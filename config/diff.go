package config

import "slices"

// Changes lists server names, sorted, that differ between two configs.
type Changes struct {
	Added   []string // in new only
	Removed []string // in old only
	Changed []string // in both, not Equal
}

// Empty reports whether no server changed.
func (c Changes) Empty() bool {
	return len(c.Added) == 0 && len(c.Removed) == 0 && len(c.Changed) == 0
}

// Diff compares the servers of two configs for a hot reload; a nil config
// has no servers. Servers not listed are unchanged and must not be touched.
func Diff(old, new *Config) Changes {
	var o, n map[string]*Server
	if old != nil {
		o = old.Servers
	}
	if new != nil {
		n = new.Servers
	}
	var c Changes
	for name, s := range n {
		switch prev, ok := o[name]; {
		case !ok:
			c.Added = append(c.Added, name)
		case !prev.Equal(s):
			c.Changed = append(c.Changed, name)
		}
	}
	for name := range o {
		if _, ok := n[name]; !ok {
			c.Removed = append(c.Removed, name)
		}
	}
	slices.Sort(c.Added)
	slices.Sort(c.Removed)
	slices.Sort(c.Changed)
	return c
}
