package launcher

import (
	"reflect"
	"testing"
)

func TestMsgRoundTrip(t *testing.T) {
	for _, m := range []Msg{
		{Kind: "ready"},
		{Kind: "start", ID: 7, Start: Start{Argv: []string{"npx", "-y", ""}, Env: []string{"A=1", `B="q" \n`},
			Dir: "/work\n dir", Hide: []string{"/state dir"}, Expose: []string{"/state dir/servers/a"}, HideFiles: []string{"/cfg/config.json"},
			NoNetwork: true, Paths: true, BaseRead: []string{"/"}, Own: []string{"/own"}, Read: []string{"/r1", "/ré\x00\xff"}, Write: []string{""}}},
		{Kind: "signal", ID: 1<<64 - 1, Signal: 15},
		{Kind: "started", ID: 3},
		{Kind: "failed", ID: 3, Error: `exec "x": not found`},
		{Kind: "exited", ID: 3, Status: 0},
		{Kind: "exited", ID: 4, Status: 9},
	} {
		enc := m.Encode()
		got, err := DecodeMsg(enc)
		if err != nil {
			t.Fatalf("decode %q: %v", enc, err)
		}
		if !reflect.DeepEqual(got, m) {
			t.Errorf("round trip through %q:\n got %+v\nwant %+v", enc, got, m)
		}
	}
	for _, p := range []Plan{{}, {Namespaces: true}} {
		if got, err := decodePlan(p.Encode()); err != nil || got != p {
			t.Errorf("plan %+v: got %+v, %v", p, got, err)
		}
	}
}

func TestDecodeRefusesWhatEncodeNeverWrites(t *testing.T) {
	for _, s := range []string{`{"kind":"start"}`, "start extra", `start dir /unquoted`, `start dir "/a"x`,
		`start dir`, "start id \"1\"  paths", `start id "x"`, `start dir "/a" `, "nope"} {
		if m, err := DecodeMsg([]byte(s)); err == nil {
			t.Errorf("DecodeMsg(%q) = %+v, want an error", s, m)
		}
	}
	for _, s := range []string{"probe", "ns extra", `ns "x"`} {
		if p, err := decodePlan(s); err == nil {
			t.Errorf("decodePlan(%q) = %+v, want an error", s, p)
		}
	}
}
