package e2e

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/internal/testing/testenv"
	"github.com/wardenmcp/warden/internal/testing/wardentest"
)

// Break 10: saving the config the ordinary way (truncate, then write) is
// no reload to an empty config. With an HTTP upstream holding a session and
// a stdio server running, the file is truncated, left empty past the
// watcher's debounce, then written again: no server stops, no upstream
// session is ended (DELETE), and a client listing tools all along never
// sees them go. A deliberate removal of every server still applies, after
// the file has settled.
func TestSaveByTruncateStopsNothing(t *testing.T) {
	fx := testenv.BuildBinary(t, fixturePkg)
	web := fixture.NewServer(fixture.Options{})
	work := t.TempDir() // the stdio server's cwd: it writes only its own places
	stats := filepath.Join(work, "local.json")
	p := wardentest.ServeProcess(t, "", map[string]any{
		"web":   map[string]any{"url": web.Serve(t), "trusted": true},
		"local": map[string]any{"command": fx, "args": []string{"-stats", stats}, "cwd": work, "trusted": true},
	})
	wardentest.WaitFor(t, 20*time.Second, "both servers ready", func() bool {
		st := statusOf(t, p)
		return serverState(st, "web") == "ready" && serverState(st, "local") == "ready"
	})
	localPID := readPID(t, stats)
	inits := readStats(t, stats).Initializes
	if len(web.HTTP().SessionIDs()) == 0 {
		t.Fatal("the HTTP upstream has no session")
	}

	// A client lists the tools all along, noting any listing without both.
	cs := wardentest.ConnectURL(t, "http://"+p.Addr+"/mcp", nil, nil)
	want := []string{"local__echo", "web__echo"}
	var (
		mu      sync.Mutex
		short   int      // listings without both
		missing []string // what the first of them lacked
		lists   int
	)
	ctx, stopListing := context.WithCancel(context.Background())
	var listing sync.WaitGroup
	listing.Go(func() {
		for ctx.Err() == nil {
			res, err := cs.ListTools(ctx, nil)
			mu.Lock()
			lists++
			if err == nil {
				var names []string
				for _, tool := range res.Tools {
					names = append(names, tool.Name)
				}
				var lacks []string
				for _, w := range want {
					if !slices.Contains(names, w) {
						lacks = append(lacks, w)
					}
				}
				if len(lacks) > 0 && short == 0 {
					missing = lacks
				}
				if len(lacks) > 0 {
					short++
				}
			}
			mu.Unlock()
			time.Sleep(20 * time.Millisecond)
		}
	})

	content, err := os.ReadFile(p.ConfigPath)
	if err != nil {
		t.Fatal(err)
	}
	reloads := strings.Count(p.Output(), "config reloaded")
	if err := os.Truncate(p.ConfigPath, 0); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // the pause of a two-step save: past the watcher's 100ms debounce
	f, err := os.OpenFile(p.ConfigPath, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(content); err != nil {
		t.Fatal(err)
	}
	f.Close()
	wardentest.WaitFor(t, 10*time.Second, "the written file to be reloaded", func() bool {
		return strings.Count(p.Output(), "config reloaded") > reloads
	})
	stopListing()
	listing.Wait()

	mu.Lock()
	if short > 0 || lists == 0 {
		t.Errorf("%d of %d listings during the save lacked tools (the first: %v)", short, lists, missing)
	}
	mu.Unlock()
	if !strings.Contains(p.Output(), "the file is empty") {
		t.Errorf("the log does not say the empty file was refused:\n%s", p.Output())
	}
	if n := web.HTTP().Deletes(); n != 0 {
		t.Errorf("the HTTP upstream's session was ended (%d DELETEs) by a save", n)
	}
	if s := readStats(t, stats); s.PID != localPID || !testenv.Alive(localPID) || s.Initializes != inits {
		t.Errorf("the stdio server was restarted by a save: pid %d→%d, initializes %d→%d", localPID, s.PID, inits, s.Initializes)
	}
	if st := statusOf(t, p); serverState(st, "web") != "ready" || serverState(st, "local") != "ready" || st.ReloadError != "" {
		t.Errorf("after the save: %+v", st)
	}
	wardentest.CallText(t, cs, "web__echo", map[string]any{"after": "save"})

	// Removing every server on purpose is applied once the file settles.
	wardentest.WriteFileAtomic(t, p.ConfigPath, []byte(`{"listen": "`+p.Addr+`", "mcpServers": {}}`), 0o600)
	wardentest.WaitFor(t, 15*time.Second, "every server removed", func() bool { return len(statusOf(t, p).Servers) == 0 })
	// The reload is logged once it is done, which may be a moment after
	// the status shows it.
	settled := func() bool {
		out := p.Output()
		i, j := strings.Index(out, "would stop every server"), strings.LastIndex(out, "config reloaded")
		return i >= 0 && j > i
	}
	if !wardentest.Poll(5*time.Second, settled) {
		t.Errorf("the log does not say the removal of every server waited for the file to settle:\n%s", p.Output())
	}
	wardentest.WaitFor(t, 10*time.Second, "the removed HTTP upstream's session to be ended", func() bool { return web.HTTP().Deletes() == 1 })
}
