package sandbox

import (
	"maps"
	"slices"
	"strings"
)

// baseEnv are the variables of Warden's environment every server gets:
// enough for npx, uvx and docker to find their programs and caches.
var baseEnv = []string{"PATH", "HOME", "LANG", "TMPDIR", "USER", "LOGNAME", "TZ"}

// Env builds a stdio server's environment from Warden's own (own, as
// os.Environ gives it): the base variables, LC_*, the names in inherit (or
// all of own with inheritAll), then the server's configured env, which wins.
// Warden's own variables (WARDEN_*) are never passed on, not even with
// inheritAll: they name the state dir and config.
func Env(own, inherit []string, inheritAll bool, env map[string]string) []string {
	var out []string
	for _, kv := range own {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || strings.HasPrefix(name, "WARDEN_") {
			continue
		}
		if _, set := env[name]; set {
			continue
		}
		if inheritAll || slices.Contains(baseEnv, name) || strings.HasPrefix(name, "LC_") || slices.Contains(inherit, name) {
			out = append(out, kv)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(env)) {
		out = append(out, k+"="+env[k])
	}
	return out
}
