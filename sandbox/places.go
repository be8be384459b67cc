package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// ownSubdirs are a server's own places inside its directory, and the
// variables that point programs at them: XDG's homes, and the caches of
// npx, uvx and docker, which would otherwise write into the user's home.
var ownSubdirs = []struct {
	dir  string
	vars []string
}{
	{"data", []string{"XDG_DATA_HOME"}},
	{"config", []string{"XDG_CONFIG_HOME"}},
	{"state", []string{"XDG_STATE_HOME"}},
	{"cache", []string{"XDG_CACHE_HOME"}},
	{"cache/npm", []string{"npm_config_cache"}},
	{"cache/uv", []string{"UV_CACHE_DIR"}},
	{"config/docker", []string{"DOCKER_CONFIG"}},
	{"tmp", []string{"TMPDIR"}},
}

// ownPlaces makes server name's own directory, <state>/servers/<name>,
// with its places inside, and returns it. In the state dir, because that
// dir is Warden's alone: the places persist across restarts, go with the
// state dir, and are out of every other server's sight with the rest of
// it (the server sees its own through its cover).
func ownPlaces(stateDir, name string) (string, error) {
	if name == "" || name == "." || name == ".." || strings.ContainsRune(name, '/') {
		return "", fmt.Errorf("a stdio server needs a name that can be a directory's, not %q", name)
	}
	own := filepath.Join(stateDir, "servers", name)
	if err := os.MkdirAll(own, 0o700); err != nil {
		return "", fmt.Errorf("the server's own directory: %w", err)
	}
	// Within a Root: the server may have left links in its directory, and
	// following one out of it would make directories where it points.
	root, err := os.OpenRoot(own)
	if err != nil {
		return "", fmt.Errorf("the server's own directory: %w", err)
	}
	defer root.Close()
	for _, s := range ownSubdirs {
		if err := root.MkdirAll(s.dir, 0o700); err != nil {
			return "", fmt.Errorf("the server's own directory %s: %w; if the server left a link there, remove %s (Warden tries again by itself)",
				own, err, filepath.Join(own, s.dir))
		}
	}
	return own, nil
}

// withOwnPlaces points env's variables at the server's own places, except
// those its config sets (configured wins).
func withOwnPlaces(env []string, own string, configured map[string]string) []string {
	set := map[string]string{}
	for _, s := range ownSubdirs {
		for _, v := range s.vars {
			if _, ok := configured[v]; !ok {
				set[v] = filepath.Join(own, s.dir)
			}
		}
	}
	out := slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		_, ok := set[name]
		return ok
	})
	for _, s := range ownSubdirs {
		for _, v := range s.vars {
			if p, ok := set[v]; ok {
				out = append(out, v+"="+p)
			}
		}
	}
	return out
}

// credentialDirs and credentialFiles are where, beneath a home, people
// keep what opens other doors: keys, cloud and cluster credentials,
// browser profiles (~/.mozilla; Chrome's and Chromium's are in ~/.config),
// and any Warden's state dir at its default place. ~/.config goes whole:
// most programs keep their tokens there.
var (
	credentialDirs = []string{".ssh", ".gnupg", ".aws", ".azure", ".kube", ".docker", ".password-store",
		".mozilla", ".pki", ".config", ".local/state/warden"}
	credentialFiles = []string{".netrc", ".git-credentials", ".pgpass", ".Xauthority"}
)

// credentialStores are the credential directories and files under each
// of homes (Warden's own, and the server's if its env names another), and
// under Warden's XDG_CONFIG_HOME and XDG_STATE_HOME when they are set
// elsewhere.
func credentialStores(homes []string, getenv func(string) string) (dirs, files []string) {
	for _, h := range homes {
		if h == "" || !filepath.IsAbs(h) {
			continue
		}
		for _, d := range credentialDirs {
			dirs = append(dirs, filepath.Join(h, d))
		}
		for _, f := range credentialFiles {
			files = append(files, filepath.Join(h, f))
		}
	}
	// The sockets of programs that would act for a server outside its
	// sandbox: the user's session bus and systemd (systemd-run --user),
	// agents, tmux and the X server.
	runtime := getenv("XDG_RUNTIME_DIR")
	if !filepath.IsAbs(runtime) {
		runtime = "/run/user/" + strconv.Itoa(os.Getuid())
	}
	dirs = append(dirs, filepath.Clean(runtime), "/tmp/.X11-unix", "/tmp/tmux-"+strconv.Itoa(os.Getuid()))
	if c := getenv("XDG_CONFIG_HOME"); filepath.IsAbs(c) {
		dirs = append(dirs, filepath.Clean(c))
	}
	if s := getenv("XDG_STATE_HOME"); filepath.IsAbs(s) {
		dirs = append(dirs, filepath.Join(s, "warden"))
	}
	slices.Sort(dirs)
	slices.Sort(files)
	return slices.Compact(dirs), slices.Compact(files)
}

// existing keeps the paths that exist (as anything), so that the launcher
// covers nothing that is not there.
func existing(paths []string) []string {
	return slices.DeleteFunc(paths, func(p string) bool {
		_, err := os.Lstat(p)
		return err != nil
	})
}

// readRoots are the paths beneath which a server may read so that it
// reads nothing in deny, for Landlock, which only allows: every entry of
// / but those on the way to a denied path, whose entries are taken the
// same way, and so on down. A link is allowed only when where it leads
// is clear of deny. What the walk misses stays unreadable: the
// directories on the way cannot be listed, and an entry made there after
// the server started cannot be read.
func readRoots(deny []string) []string {
	var out []string
	clear := func(p string) bool {
		return !slices.ContainsFunc(deny, func(d string) bool { return within(p, d) || within(d, p) })
	}
	var walk func(dir string)
	walk = func(dir string) {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return
		}
		for _, e := range entries {
			p := filepath.Join(dir, e.Name())
			switch {
			case slices.Contains(deny, p):
			case e.Type()&os.ModeSymlink != 0:
				if real, err := filepath.EvalSymlinks(p); err == nil && clear(real) {
					out = append(out, p)
				}
			case clear(p):
				out = append(out, p)
			case e.IsDir():
				walk(p)
			}
		}
	}
	walk("/")
	return out
}

// withReal is paths and, for those reached through a link (a home under
// a linked /home, say), where they really are: the walk must go around
// both.
func withReal(paths []string) []string {
	out := slices.Clone(paths)
	for _, p := range paths {
		if real, err := filepath.EvalSymlinks(p); err == nil && real != p {
			out = append(out, real)
		}
	}
	return out
}
