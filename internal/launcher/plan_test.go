package launcher

import (
	"reflect"
	"testing"
)

func TestPlanRoundTrip(t *testing.T) {
	for _, p := range []Plan{
		{},
		{Probe: true},
		{Namespaces: true, Hide: []string{"/state dir", `/with "quotes"`}, HideFiles: []string{"/cfg/config.json"},
			Dir: "/work\n dir", NoNetwork: true, Paths: true, Read: []string{"/r1", "/ré\x00\xff"}, Write: []string{""}},
		{Paths: true, Write: []string{"/w"}},
	} {
		enc := p.Encode()
		got, err := decodePlan(enc)
		if err != nil {
			t.Fatalf("decode %q: %v", enc, err)
		}
		if !reflect.DeepEqual(got, p) {
			t.Errorf("round trip through %q:\n got %+v\nwant %+v", enc, got, p)
		}
	}
}

func TestPlanDecodeRefusesWhatEncodeNeverWrites(t *testing.T) {
	for _, s := range []string{`{"probe":true}`, "probe extra", `hide /unquoted`, `hide "/a"x`, `dir`, "ns  probe"} {
		if p, err := decodePlan(s); err == nil {
			t.Errorf("decodePlan(%q) = %+v, want an error", s, p)
		}
	}
}
