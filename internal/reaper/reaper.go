// Package reaper keeps a stdio server's whole process tree from outliving
// Warden. Warden starts each stdio server through a small copy of itself (the
// reaper) that leads a new process group, asks the kernel for a signal when
// Warden dies (even by SIGKILL), and then kills the whole group. Without it a
// launcher such as npx would die with Warden but leave its node child behind.
package reaper

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"
)

// EnvVar, set to "1", makes MaybeRun take over the process.
const EnvVar = "WARDEN_REAPER"

// MaybeRun runs the reaper and exits when this process was started as one.
// Call it first thing in main (and in TestMain of tests that start reapers).
func MaybeRun() {
	if os.Getenv(EnvVar) != "1" {
		return
	}
	os.Exit(run(os.Args[1:]))
}

// Command returns the command that runs name with args under the reaper
// binary self (normally os.Executable()).
func Command(self, name string, args ...string) *exec.Cmd {
	cmd := exec.Command(self, append([]string{name}, args...)...)
	cmd.Env = append(os.Environ(), EnvVar+"=1")
	return cmd
}

func run(argv []string) int {
	if len(argv) == 0 {
		fmt.Fprintln(os.Stderr, "reaper: no command")
		return 2
	}
	parent := os.Getppid()
	// Ask for SIGTERM when the parent (Warden) dies, then close the race where
	// it died before the request took effect.
	_ = setPdeathsig(syscall.SIGTERM)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	if os.Getppid() != parent {
		return killGroup()
	}

	child := exec.Command(argv[0], argv[1:]...)
	child.Stdin, child.Stdout, child.Stderr = os.Stdin, os.Stdout, os.Stderr
	child.Env = withoutReaperEnv(os.Environ())
	if err := child.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "reaper: start %s: %v\n", argv[0], err)
		return 127
	}
	done := make(chan int, 1)
	go func() {
		_ = child.Wait()
		done <- child.ProcessState.ExitCode()
	}()
	select {
	case code := <-done:
		// The server exited by itself; Warden's stop kills any leftover of
		// the group.
		return code
	case <-sigs:
		return killGroup()
	}
}

// killGroup asks the group to stop, then forces it. The reaper is in the group
// and dies with the final SIGKILL.
func killGroup() int {
	signal.Ignore(syscall.SIGTERM)
	pg := syscall.Getpgrp()
	_ = syscall.Kill(-pg, syscall.SIGTERM)
	time.Sleep(500 * time.Millisecond)
	_ = syscall.Kill(-pg, syscall.SIGKILL)
	return 1
}

func withoutReaperEnv(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if kv != EnvVar+"=1" {
			out = append(out, kv)
		}
	}
	return out
}
