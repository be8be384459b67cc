package main

import (
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// buildVersion is what the binary knows about its own build.
type buildVersion struct {
	Version    string `json:"version"`
	Commit     string `json:"commit,omitempty"`
	CommitTime string `json:"commit_time,omitempty"`
	Modified   bool   `json:"modified,omitempty"` // built from a tree with uncommitted changes
	Go         string `json:"go,omitempty"`
}

// readBuildVersion reads the version from the build info: stamped (set with
// -ldflags "-X main.version=..."), else the module's version when the go
// command took the module from its proxy (go install ...@v1.2.3), else
// "dev". A binary built from a checkout is "dev" however it was built: go
// build and go install stamp a version made from the commit, go run stamps
// nothing, and a daemon started with go run must not seem another version
// than the warden installed from the same commit. Its commit is kept
// apart (String shows it).
func readBuildVersion(stamped string, info *debug.BuildInfo, ok bool) buildVersion {
	v := buildVersion{Version: stamped}
	if !ok {
		return v.orDev()
	}
	v.Go = info.GoVersion
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Commit = s.Value
		case "vcs.time":
			v.CommitTime = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	if v.Version == "" && v.Commit == "" && info.Main.Version != "(devel)" {
		v.Version = info.Main.Version
	}
	return v.orDev()
}

func (v buildVersion) orDev() buildVersion {
	if v.Version == "" {
		v.Version = "dev"
	}
	return v
}

// String is the version on one line, with the commit when known.
func (v buildVersion) String() string {
	var extra []string
	if v.Commit != "" {
		extra = append(extra, "commit "+v.Commit)
	}
	if v.CommitTime != "" {
		extra = append(extra, v.CommitTime)
	}
	if v.Modified {
		extra = append(extra, "modified")
	}
	if v.Go != "" {
		extra = append(extra, v.Go)
	}
	if len(extra) == 0 {
		return v.Version
	}
	return v.Version + " (" + strings.Join(extra, ", ") + ")"
}

// build is this binary's version.
var build = func() buildVersion {
	info, ok := debug.ReadBuildInfo()
	return readBuildVersion(version, info, ok)
}()

func newVersionCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Show Warden's version and the commit it was built from",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if g.jsonOut {
				return g.printJSON(build)
			}
			_, err := fmt.Fprintf(g.stdout, "warden %s\n", build)
			return err
		},
	}
}
