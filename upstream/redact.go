package upstream

import (
	"bytes"
	"encoding/json"
	"io"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/wardenmcp/warden/config"
	"github.com/wardenmcp/warden/guardrails"
)

// The config holds secrets (${env:} expansions, a URL's password, header
// tokens), and errors may quote them: Go's HTTP errors quote the URL (with
// the password masked), an upstream's error may echo what it was sent.
// Every error that leaves this package (into logs, status, events,
// refusals) goes through redact, which shows the URL as written in the file
// (without userinfo or query) and masks the secrets wherever else they
// appear, in the encodings an error may give them, and masks credentials in
// known formats (guardrails.MaskSecrets) that no config names: a server may
// print or echo a key of its own.

// redactedError is an error whose text had its secrets masked.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// redact is err with cfg's secrets masked (see above).
func redact(cfg *config.Server, err error) error {
	if err == nil {
		return err
	}
	if a := Answer(err); a != nil {
		// The upstream's answer is passed on to the client as it is (see
		// Answer), so it is masked where it sits; written only when masked,
		// as an error of the SDK's own may be a shared sentinel.
		if m := redactText(a.Message, cfg); m != a.Message {
			a.Message = m
		}
		if d := redactText(string(a.Data), cfg); d != string(a.Data) {
			if !json.Valid([]byte(d)) { // a mask across a quote: keep it as text
				b, _ := json.Marshal(d)
				d = string(b)
			}
			a.Data = json.RawMessage(d)
		}
	}
	msg := err.Error()
	if out := redactText(msg, cfg); out != msg {
		return &redactedError{msg: out, err: err}
	}
	return err
}

// urlMark stands in for the URL while the secrets are masked, so that the
// URL shown is not masked in turn.
const urlMark = "\x00url\x00"

// redactText shows cfg's URL as written and masks cfg's secrets in s.
func redactText(s string, cfg *config.Server) string {
	if cfg.URL != "" {
		for _, f := range urlForms(cfg.URL) {
			s = replaceEncoded(s, f, urlMark)
		}
	}
	for _, secret := range cfg.Secrets() {
		s = replaceEncoded(s, secret, "***")
	}
	return guardrails.MaskSecrets(strings.ReplaceAll(s, urlMark, cfg.DisplayURL()))
}

// urlForms are the ways an error quotes a URL: as is, normalized, and with
// the password masked the way net/http and net/url do it.
func urlForms(raw string) []string {
	forms := []string{raw}
	u, err := url.Parse(raw)
	if err != nil {
		return forms
	}
	forms = append(forms, u.String(), u.Redacted())
	if _, ok := u.User.Password(); ok {
		forms = append(forms, strings.Replace(u.String(), u.User.String()+"@", u.User.Username()+":***@", 1))
	}
	return forms
}

// replaceEncoded replaces old in s as is, escaped for a URL's query or
// path, and escaped inside a Go-quoted string (%q).
func replaceEncoded(s, old, with string) string {
	q := strconv.Quote(old)
	for _, form := range []string{old, url.QueryEscape(old), url.PathEscape(old), q[1 : len(q)-1]} {
		s = strings.ReplaceAll(s, form, with)
	}
	return s
}

// redactingWriter masks a server's configured secrets in what the server
// writes to its stderr log (it may print its own environment). It masks
// whole lines, so a secret is never split between two writes; a line longer
// than maxLogLine is masked and written in pieces.
type redactingWriter struct {
	w   io.Writer
	cfg *config.Server
	mu  sync.Mutex
	buf []byte
}

const maxLogLine = 64 << 10

func (r *redactingWriter) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf = append(r.buf, p...)
	for {
		i := bytes.IndexByte(r.buf, '\n')
		if i < 0 && len(r.buf) < maxLogLine {
			return len(p), nil
		}
		if i < 0 {
			i = len(r.buf) - 1
		}
		line := r.buf[:i+1]
		if _, err := io.WriteString(r.w, redactText(string(line), r.cfg)); err != nil {
			return len(p), err
		}
		r.buf = r.buf[i+1:]
	}
}

// Flush writes what is left of an unfinished last line.
func (r *redactingWriter) Flush() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.buf) > 0 {
		_, _ = io.WriteString(r.w, redactText(string(r.buf), r.cfg))
		r.buf = nil
	}
}
