package events

import "testing"

func TestPublishReachesSubscribersInOrder(t *testing.T) {
	b := New()
	ch, stop := b.Subscribe()
	defer stop()
	b.Publish(Event{Type: "server", Server: "a"})
	b.Publish(Event{Type: "tools", Server: "b"})
	e1, e2 := <-ch, <-ch
	if e1.Seq != 1 || e2.Seq != 2 || e1.Server != "a" || e2.Type != "tools" {
		t.Fatalf("got %+v then %+v", e1, e2)
	}
}

func TestSlowSubscriberDoesNotBlockPublish(t *testing.T) {
	b := New()
	_, stop := b.Subscribe()
	defer stop()
	for range 1000 { // more than the buffer; must not block
		b.Publish(Event{Type: "x"})
	}
	var nilBroker *Broker
	nilBroker.Publish(Event{}) // a nil broker drops
}
