package sandbox

import (
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// A server starts as a plain process of Warden's user, whatever the
// launcher did to itself: no signal ignored or blocked (the launcher
// ignores none, or the server would inherit it), no capability, none of
// Warden's files, no_new_privs, and the state dir out of its sight.
func TestServerStartsClean(t *testing.T) {
	self, err := os.Executable() // this test binary runs the launcher from its init too
	if err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	if err := os.WriteFile(filepath.Join(state, "api-token"), []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A file of Warden's that is not close-on-exec, as one inherited from
	// whoever started it would be.
	leak, err := syscall.Dup(0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(leak)
	for _, mode := range []Mode{Namespaces, Reaper} {
		t.Run(mode.String(), func(t *testing.T) {
			l, err := NewLauncher(self, state, "", mode)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			out := run(t, l, Spec{Name: "sh", Command: "sh", Args: []string{"-c", "cat /proc/self/status; id -u; ls " + state + " 2>&1; " +
				"test -e /proc/self/fd/" + strconv.Itoa(leak) + " && echo leaked; echo done"}})
			if strings.Contains(out, "leaked") {
				t.Errorf("the server holds Warden's fd %d", leak)
			}
			want := map[string]string{"SigIgn": "0000000000000000", "SigBlk": "0000000000000000", "CapInh": "0000000000000000",
				"CapAmb": "0000000000000000", "NoNewPrivs": "1"}
			if mode == Namespaces || os.Getuid() != 0 {
				want["CapEff"], want["CapPrm"] = "0000000000000000", "0000000000000000"
			}
			for k, v := range want {
				if !strings.Contains(out, "\n"+k+":\t"+v+"\n") {
					t.Errorf("the server's %s is not %s:\n%s", k, v, out)
				}
			}
			if !strings.Contains(out, "\n"+strconv.Itoa(os.Getuid())+"\n") {
				t.Errorf("the server does not run as uid %d:\n%s", os.Getuid(), out)
			}
			// Covered in namespaces, left out of Landlock's read rules
			// without.
			if strings.Contains(out, "api-token") {
				t.Errorf("the server lists the state dir in mode %s:\n%s", mode, out)
			}
		})
	}
}

// run starts spec through l and returns what it printed.
func run(t *testing.T, l *Launcher, spec Spec) string {
	t.Helper()
	devNull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	p, err := l.Start(t.Context(), spec, devNull, w, w)
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(r)
	<-p.Done()
	if p.Err() != nil {
		t.Fatalf("%v:\n%s", p.Err(), out)
	}
	return string(out)
}
