package api

import (
	"bufio"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/wardenmcp/warden/internal/logfile"
)

// logsEnv has a stdio server st (disabled: its log is written by the
// test) and an HTTP server h; broken's log cannot be opened.
func logsEnv(t *testing.T) (*env, *logfile.File) {
	t.Helper()
	f, err := logfile.Open(filepath.Join(t.TempDir(), "st.log"), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	for i := 1; i <= 5; i++ {
		fmt.Fprintf(f, "line %d\n", i)
	}
	e := newEnv(t, `{"st": {"command": "st-server", "disabled": true}, "broken": {"command": "b", "disabled": true},
		"h": {"url": "http://127.0.0.1:1/mcp", "disabled": true}}`, func(d *Deps) {
		d.Logs = func(server string) (LogFile, error) {
			if server != "st" {
				return nil, errors.New("cannot open the log of " + server)
			}
			return f, nil
		}
	})
	return e, f
}

func TestLogs(t *testing.T) {
	e, _ := logsEnv(t)
	tests := []struct{ query, want string }{
		{"", "line 1\nline 2\nline 3\nline 4\nline 5\n"}, // fewer than DefaultLogLines
		{"?lines=2", "line 4\nline 5\n"},
		{"?lines=0", "line 1\nline 2\nline 3\nline 4\nline 5\n"},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			rec := e.do("GET", "/v1/servers/st/logs"+tt.query, "")
			if rec.Code != http.StatusOK || rec.Body.String() != tt.want ||
				rec.Header().Get("Content-Type") != "text/plain; charset=utf-8" || rec.Header().Get("X-Content-Type-Options") != "nosniff" {
				t.Errorf("GET logs%s: %d %v %q; want %q as text/plain", tt.query, rec.Code, rec.Header(), rec.Body, tt.want)
			}
		})
	}
	refusals := []struct {
		path string
		want refusal
	}{
		{"/v1/servers/st/logs?lines=-1", refusal{http.StatusBadRequest, "bad_request", []string{`lines="-1"`, "0 for the whole log"}}},
		{"/v1/servers/st/logs?lines=ten", refusal{http.StatusBadRequest, "bad_request", []string{`lines="ten"`}}},
		{"/v1/servers/h/logs", refusal{http.StatusNotFound, "no_log", []string{`"h"`, "http", "warden status"}}},
		{"/v1/servers/broken/logs", refusal{http.StatusInternalServerError, "log_error", []string{"cannot open the log of broken"}}},
	}
	for _, tt := range refusals {
		t.Run(tt.path, func(t *testing.T) {
			expectError(t, e.do("GET", tt.path, ""), tt.want)
		})
	}
}

// With follow, what the server writes next arrives until the client goes
// away.
func TestLogsFollow(t *testing.T) {
	e, f := logsEnv(t)
	ended := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.h.ServeHTTP(w, r)
		close(ended)
	}))
	t.Cleanup(srv.Close)
	resp, cancel := openStream(t, srv, "/v1/servers/st/logs?lines=1&follow=1")
	r := bufio.NewReader(resp.Body)
	if line, err := r.ReadString('\n'); err != nil || line != "line 5\n" {
		t.Fatalf("first line %q, %v", line, err)
	}
	fmt.Fprintln(f, "line 6")
	if line, err := r.ReadString('\n'); err != nil || line != "line 6\n" {
		t.Fatalf("followed line %q, %v", line, err)
	}
	cancel()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("following the log did not end when the client went away")
	}
}
