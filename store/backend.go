package store

import "fmt"

// writable refuses op (Lock, Publish) in a read-only transaction: every
// backend's rule.
func writable(write bool, op string) error {
	if !write {
		return fmt.Errorf("store: %s in a read-only transaction", op)
	}
	return nil
}

// checkPublish is what every backend checks before publishing msg.
func checkPublish(write bool, topic string, msg []byte) error {
	if err := writable(write, "Publish"); err != nil {
		return err
	}
	if len(msg) > MaxMessage {
		return fmt.Errorf("store: a message of %d bytes on %s is over %d", len(msg), topic, MaxMessage)
	}
	return nil
}
