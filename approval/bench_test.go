package approval

import (
	"fmt"
	"testing"
)

// The gateway's own time for a discovery pass over a 1000-tool server: all
// hashing, deciding and (first pass) the fsynced commit. Target: 20 ms.
func BenchmarkApply1000(b *testing.B) {
	inv := inventory(1000, "tool")
	b.Run("steady", func(b *testing.B) {
		ts := newStore(b)
		must[ApplyResult](b)(ts.r.Apply("s", true, 1, inv))
		seq := uint64(1)
		for b.Loop() {
			seq++
			if res, err := ts.r.Apply("s", true, seq, inv); err != nil || res.Written != 0 {
				b.Fatal(res, err)
			}
		}
	})
	b.Run("first", func(b *testing.B) {
		ts := newStore(b)
		i := 0
		for b.Loop() {
			i++
			if res, err := ts.r.Apply(fmt.Sprintf("s%d", i), true, 1, inv); err != nil || res.Written != 1000 {
				b.Fatal(res, err)
			}
		}
	})
}

// Approval of 320 pending tools, bound to the reviewed hashes, including the
// fsynced commit and the read-back answer. Target: 50 ms.
func BenchmarkApproveAll320(b *testing.B) {
	inv := inventory(320, "read_customer_record")
	reviewed := hashes(b, inv)
	for _, kind := range []string{"tools_all", "server"} {
		b.Run(kind, func(b *testing.B) {
			ts := newStore(b)
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				srv := fmt.Sprintf("s%d", i)
				must[ApplyResult](b)(ts.r.Apply(srv, false, 1, inv))
				b.StartTimer()
				var ans Answer
				var err error
				if kind == "server" {
					ans, err = ts.r.ApproveServer(srv, ServerApproval{ExpectedHashes: reviewed})
				} else {
					ans, err = ts.r.ApproveTools(srv, ToolApproval{All: true, ExpectedHashes: reviewed})
				}
				if err != nil || ans.ApprovedCount != 320 {
					b.Fatal(ans, err)
				}
			}
		})
	}
}

func BenchmarkHash(b *testing.B) {
	tl := tool("read_customer_record_0001", "Reads record 1 of the customer database and returns it as JSON; never writes.")
	for b.Loop() {
		if _, err := Hash(tl); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCheck(b *testing.B) {
	ts := newStore(b)
	tools := inventory(1000, "tool")
	must[ApplyResult](b)(ts.r.Apply("s", true, 1, tools))
	hash := must[string](b)(Hash(tools[500]))
	b.ReportAllocs()
	for b.Loop() {
		if st, _ := ts.r.Check("s", tools[500].Name, hash); st != StatusApproved {
			b.Fatal(st)
		}
	}
}
