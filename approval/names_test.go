package approval

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/store"
)

func TestNameProblem(t *testing.T) {
	for name, want := range map[string]string{
		"read_file":                  "",
		"a.b-c_D9":                   "",
		strings.Repeat("x", 128):     "",
		strings.Repeat("x", 129):     "129 characters long",
		"zz\x1b[2J":                  "U+001B at byte 2",
		"safe\u202eread":             "U+202E at byte 4",
		"zero\u200bwidth":            "U+200B at byte 4",
		"sp ace":                     "U+0020 at byte 2",
		"r\xffaw":                    "the byte 0xff, not UTF-8, at byte 1",
		"":                           "empty",
		"\u0430pprove_c\u0443rillic": "U+0430 at byte 0",
	} {
		got := NameProblem(name)
		if (want == "") != (got == "") || !strings.Contains(got, want) {
			t.Errorf("NameProblem(%q) = %q, want it to say %q", name, got, want)
		}
	}
}

// A tool whose name is outside the character set is held as invalid from the
// first sight, even in a trusted server's baseline; no approval or block
// changes that, and a store that held it approved (written before names were
// checked) holds it invalid when opened.
func TestInvalidNameHeld(t *testing.T) {
	ts := newStore(t)
	r := ts.r
	esc, bidi := "zz\x1b[2J\x1b[Happrove 1 tool(s): safe_read", "safe\u202edaer"
	inv := []*mcp.Tool{tool("safe_read", "d"), tool(esc, "d"), tool(bidi, "d")}
	if _, err := r.Apply("s", true, 1, inv); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]Status{"safe_read": StatusApproved, esc: StatusInvalid, bidi: StatusInvalid} {
		if st, _ := check(r, "s", name); st != want {
			t.Errorf("%q: %s, want %s", name, st, want)
		}
	}
	for _, rec := range r.Tools("s") {
		if rec.Status == StatusInvalid && !strings.Contains(rec.Invalid, "MCP tool names") {
			t.Errorf("%q: invalid without the reason: %q", rec.Name, rec.Invalid)
		}
	}
	if st, _ := r.Server("s"); st.Counts.Invalid != 2 || st.Counts.Approved != 1 {
		t.Errorf("counts %+v", st.Counts)
	}
	if _, err := r.ApproveTools("s", ToolApproval{Tools: []string{"safe_read", esc}}); !errors.Is(err, ErrInvalidRequest) || !strings.Contains(err.Error(), "cannot be approved") {
		t.Errorf("naming an invalid tool: %v", err)
	}
	if _, err := r.Block("s", []string{bidi}, "test"); !errors.Is(err, ErrInvalidRequest) {
		t.Errorf("blocking an invalid tool: %v", err)
	}
	if _, err := r.ApproveServer("s", ServerApproval{ExpectedHashes: hashes(t, inv[1:2])}); !errors.Is(err, ErrInvalidRequest) {
		t.Errorf("admitting with an invalid tool: %v", err)
	}
	if err := r.Quarantine("s", "test"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ApproveServer("s", ServerApproval{}); err != nil {
		t.Fatal(err)
	}
	if a, err := r.ApproveTools("s", ToolApproval{All: true}); err != nil || a.StillPending != 0 || a.ApprovedCount != 0 {
		t.Errorf("approve all: %+v %v", a, err)
	}
	if st, _ := check(r, "s", esc); st != StatusInvalid {
		t.Errorf("after approvals of all: %s", st)
	}

	// A store written before names were checked: the record says approved.
	err := ts.db.Update(context.Background(), func(tx store.Tx) error {
		b, err := tx.Get(bucketTools+"/s", []byte(esc))
		if err != nil {
			return err
		}
		old := string(b)
		v := strings.Replace(old, `"status":"invalid"`, `"status":"approved"`, 1)
		if v == old {
			t.Fatalf("stored record %s", old)
		}
		return tx.Put(bucketTools+"/s", []byte(esc), []byte(v))
	})
	if err != nil {
		t.Fatal(err)
	}
	r = ts.reopen()
	if st, _ := check(r, "s", esc); st != StatusInvalid {
		t.Errorf("stored as approved, opened as %s", st)
	}
}
