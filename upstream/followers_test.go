package upstream

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Two followers share a URI: only the last to leave reports that the
// upstream subscription is to end, and then no session counts as
// subscribed to it; one that never followed leaves nothing.
func TestFollowersLastToLeave(t *testing.T) {
	f := &followers{}
	a, b, stranger := new(int), new(int), new(int)
	f.follow("test://r", a)
	f.follow("test://r", b)
	f.follow("test://r", a) // again: still one follower
	f.follow("test://other", b)
	f.subbed = map[string]*mcp.ClientSession{"test://r": {}}

	if got := f.followedBy(b); !slices.Equal(sorted(got), []string{"test://other", "test://r"}) {
		t.Fatalf("b follows %v", got)
	}
	if f.unfollow("test://r", stranger) {
		t.Fatal("a stranger leaving ended the subscription")
	}
	if f.unfollow("test://r", a) {
		t.Fatal("the first of two followers leaving ended the subscription")
	}
	if f.subbed["test://r"] == nil {
		t.Fatal("a subscription with a follower left was forgotten")
	}
	if f.unfollow("test://r", a) {
		t.Fatal("a follower leaving twice ended the subscription")
	}
	if !f.unfollow("test://r", b) {
		t.Fatal("the last follower leaving did not end the subscription")
	}
	if f.subbed["test://r"] != nil {
		t.Fatal("after the last follower left, a session still counts as subscribed")
	}
	if got := f.followed(); !slices.Equal(got, []string{"test://other"}) {
		t.Fatalf("followed %v, want only test://other", got)
	}
}

// adopt carries the followers over and leaves the old bookkeeping with
// none; which session is subscribed stays behind (it is the old one's).
func TestFollowersAdopt(t *testing.T) {
	old, next := &followers{}, &followers{}
	a, b, c := new(int), new(int), new(int)
	old.follow("test://r", a)
	old.follow("test://r", b)
	old.follow("test://s", a)
	old.subbed = map[string]*mcp.ClientSession{"test://r": {}}
	next.follow("test://r", c)

	next.adopt(old)
	if got := old.followed(); len(got) != 0 {
		t.Fatalf("the old connection still has followers of %v", got)
	}
	if got := sorted(next.followed()); !slices.Equal(got, []string{"test://r", "test://s"}) {
		t.Fatalf("followed after adopt %v", got)
	}
	if next.subbed["test://r"] != nil {
		t.Fatal("the old session's subscription was carried over")
	}
	for _, who := range []any{a, b} { // c and b stay: a leaving is not the last
		if next.unfollow("test://r", who) {
			t.Fatalf("%v leaving ended a subscription c still follows", who)
		}
	}
	if !next.unfollow("test://r", c) || !next.unfollow("test://s", a) {
		t.Fatal("the last adopted follower leaving did not end the subscription")
	}
}

// Sessions follow and leave concurrently (subscribe calls, sessions ending,
// a reload's adopt); -race fails if the bookkeeping is unguarded.
func TestFollowersConcurrent(t *testing.T) {
	f, other := &followers{}, &followers{}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			who := new(int)
			uri := fmt.Sprintf("test://%d", i%3)
			for range 100 {
				f.follow(uri, who)
				other.follow(uri, who)
				_ = f.followedBy(who)
				_ = f.followed()
				f.unfollow(uri, who)
				f.adopt(other)
			}
		}()
	}
	wg.Wait()
	// Each goroutine's last act was an adopt, after its last follow in
	// other: nothing may be left behind there.
	if got := other.followed(); len(got) != 0 {
		t.Fatalf("adopt left followers of %v behind", got)
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// A subscription refused upstream makes no follower, and one who follows
// nothing leaving calls nothing upstream.
func TestFollowersOnlyAfterUpstreamSays(t *testing.T) {
	calls := 0
	f := &followers{do: func(context.Context, func(context.Context, *mcp.ClientSession) error) error {
		calls++
		return errors.New("server down")
	}}
	if err := f.subscribe(context.Background(), "file:///a", "s1"); err == nil {
		t.Fatal("a refused subscription reported no error")
	}
	if uris := f.followed(); len(uris) != 0 {
		t.Fatalf("a refused subscription left followers of %q", uris)
	}
	if err := f.unsubscribe(context.Background(), "file:///a", "s1"); err != nil || calls != 1 {
		t.Fatalf("one who follows nothing leaving: err %v, %d calls upstream; want none beyond the refused one", err, calls)
	}
}
