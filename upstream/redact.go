package upstream

import (
	"net/url"
	"strings"
)

// The URL in the config may carry secrets (${env:} expansions in its query
// or path, a password), and Go's HTTP errors quote the URL, whole or with
// the password masked. Every error that leaves this package (into logs,
// status, events, refusals) goes through redact, which shows the URL as
// written in the file instead, without userinfo or query, and masks its
// secret parts wherever else they appear.

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
	out := msg
	forms, secrets := urlSecrets(cfg.URL)
	for _, f := range forms {
		out = strings.ReplaceAll(out, f, cfg.DisplayURL())
	}
	for _, s := range secrets {
		out = strings.ReplaceAll(out, s, "***")
	}
	if out == msg {
		return err
	}
	return &redactedError{msg: out, err: err}
}

// urlSecrets returns the forms in which errors quote the URL raw, and the
// parts of it that may be secret should they appear on their own: the
// password, the query and its values (short ones, which would mask innocent
// text, excepted).
func urlSecrets(raw string) (forms, secrets []string) {
	forms = []string{raw}
	u, err := url.Parse(raw)
	if err != nil {
		return forms, nil
	}
	forms = append(forms, u.String(), u.Redacted())
	add := func(s string) {
		if len(s) >= 4 {
			secrets = append(secrets, s)
		}
	}
	if p, ok := u.User.Password(); ok {
		add(p)
	}
	add(u.RawQuery)
	for _, vs := range u.Query() {
		for _, v := range vs {
			add(v)
		}
	}
	return forms, secrets
}
