package upstream

import "strings"

// The URL in the config may carry secrets (${env:} expansions in its query
// or path), and Go's HTTP errors quote the URL whole. Every error that leaves
// this package (into logs, status, events, refusals) goes through redact,
// which shows the URL as written in the file instead.

// redactedError is an error whose text had the live URL replaced.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

func (c *Conn) redact(err error) error {
	cfg := c.Config()
	if err == nil || cfg.URL == "" {
		return err
	}
	msg := err.Error()
	if !strings.Contains(msg, cfg.URL) {
		return err
	}
	return &redactedError{msg: strings.ReplaceAll(msg, cfg.URL, cfg.DisplayURL()), err: err}
}
