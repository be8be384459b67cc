package sandbox

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/wardenmcp/warden/internal/launcher"
)

// Container runs a server inside a container image instead of on the host.
type Container struct {
	Engine string // "docker" or "podman"; "" for whichever is installed, docker first
	Image  string
}

// inContainer rewrites spec to run its command inside c's image with the
// engine's client: the image's file system, spec's Read and Write paths
// mounted at the same place (read-only for Read), its env passed by name
// (values stay out of the command line), no network with NoNetwork. The
// engine, not Warden, runs the container: --rm removes it when the server
// exits, which it does when its stdin closes.
func inContainer(spec Spec, env []string) (Spec, error) {
	c := spec.Container
	engines := []string{"docker", "podman"}
	if c.Engine != "" {
		engines = []string{c.Engine}
	}
	engine := ""
	for _, e := range engines {
		if _, err := launcher.LookPath(e, env); err == nil {
			engine = e
			break
		}
	}
	if engine == "" {
		return spec, fmt.Errorf(`"sandbox": {"container": ...} needs %s on PATH; install it or remove "container"`, strings.Join(engines, " or "))
	}
	args := []string{"run", "--rm", "-i", "--init"}
	if spec.NoNetwork {
		args = append(args, "--network", "none")
	}
	for _, k := range slices.Sorted(maps.Keys(spec.Env)) {
		args = append(args, "-e", k)
	}
	for _, p := range spec.Read {
		args = append(args, "-v", p+":"+p+":ro")
	}
	for _, p := range spec.Write {
		args = append(args, "-v", p+":"+p)
	}
	if spec.Dir != "" {
		args = append(args, "-w", spec.Dir)
	}
	args = append(append(args, c.Image, spec.Command), spec.Args...)
	// The container confines the server; its client runs as any server.
	return Spec{Command: engine, Args: args, Env: spec.Env, InheritEnv: spec.InheritEnv, InheritAllEnv: spec.InheritAllEnv}, nil
}
