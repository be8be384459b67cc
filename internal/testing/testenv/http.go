package testenv

import "net/http"

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
