package testenv

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
)

// StatusWriter remembers the status a handler writes through it (Code
// starts as the caller sets it; http.ResponseController reaches the writer
// under it).
type StatusWriter struct {
	http.ResponseWriter
	Code int
}

func (s *StatusWriter) WriteHeader(code int) {
	s.Code = code
	s.ResponseWriter.WriteHeader(code)
}

func (s *StatusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// Bearer is an http.RoundTripper that sends its token with each request,
// as a known caller of Warden's MCP endpoints does.
type Bearer string

func (b Bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// TokenSHA256 is token's hash as the config's "clients" write it.
func TokenSHA256(token string) string {
	sum := sha256.Sum256([]byte(token))
	return "sha256:" + hex.EncodeToString(sum[:])
}
