package daemon

import (
	"maps"
	"slices"

	"github.com/wardenmcp/warden/config"
)

func sortedNames(m map[string]*config.Server) []string {
	return slices.Sorted(maps.Keys(m))
}
