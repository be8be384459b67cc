package guardrails

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

// The phrase rules and the secret rules are compiled on first use, not at
// package init, and the first Scan, Changed, FindSecrets and MaskSecrets may
// come from many goroutines at once (the daemon scans discoveries and checks
// calls side by side). Each must find what a serial run finds. The check
// runs in a fresh process of this test binary, where its use is truly the
// first; under -race the race detector watches it there too.
func TestFirstUseConcurrent(t *testing.T) {
	if os.Getenv("GUARDRAILS_FIRST_USE") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestFirstUseConcurrent$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), "GUARDRAILS_FIRST_USE=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestFirstUseConcurrent") {
			t.Fatalf("the first use in a fresh process: %v\n%s", err, out)
		}
		return
	}
	var entries []corpusEntry
	for i, e := range loadCorpus(t) {
		if i%5 == 0 { // of each file, benign, poisoned and changes: the race needs no more
			entries = append(entries, e)
		}
	}
	var calls [][]byte
	for _, secret := range testSecrets {
		calls = append(calls, args(t, map[string]any{"note": "hello", "token": mix(24, alnum), "opts": []any{1, secret}}))
	}
	all := func() string {
		var b strings.Builder
		for _, e := range entries {
			if e.Def != nil {
				fs, err := Scan(e.Def)
				fmt.Fprintln(&b, e.ID, fs, err)
			} else {
				fs, err := Changed(e.Old, e.New)
				fmt.Fprintln(&b, e.ID, fs, err)
			}
		}
		for _, c := range calls {
			fmt.Fprintln(&b, FindSecrets(c), MaskSecrets(string(c)))
		}
		return b.String()
	}
	const n = 8
	got := make([]string, n)
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-gate
			got[i] = all()
		})
	}
	close(gate)
	wg.Wait()
	want := all()
	if !strings.Contains(want, "instruction-override") || !strings.Contains(want, "[REDACTED:") {
		t.Fatalf("the serial run found no override and masked no secret: the comparison proves nothing\n%.2000s", want)
	}
	for i, g := range got {
		if g != want {
			t.Errorf("goroutine %d found other than the serial run:\n%.2000s\nwant\n%.2000s", i, g, want)
		}
	}
}
