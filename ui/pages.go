package ui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/wardenmcp/warden/activity"
	"github.com/wardenmcp/warden/api"
	"github.com/wardenmcp/warden/approval"
	"github.com/wardenmcp/warden/callers"
	"github.com/wardenmcp/warden/config"
	"github.com/wardenmcp/warden/internal/display"
	"github.com/wardenmcp/warden/sessions"
	"github.com/wardenmcp/warden/writes"
)

// page is what every template gets.
type page struct {
	Title    string
	CSRF     string
	Operator callers.Operator // who is logged in
	Flash    *flash
	Problem  string // why the page could not show its data
	Issuer   string // the identity provider people log in at, if any
	Data     any
}

// Admin reports whether the operator may do what only an admin may
// (clear latches, quarantine): the page offers it only then.
func (p page) Admin() bool { return p.Operator.May(config.RoleAdmin) }

// mismatch is a tool that changed since the page showed it.
type mismatch = approval.Mismatch

// apiError is an error answer of the REST API.
type apiError struct {
	Status int
	Body   struct {
		Code    string                      `json:"code"`
		Message string                      `json:"message"`
		Details *approval.HashMismatchError `json:"details"`
	} `json:"error"`
}

func (e *apiError) Error() string { return e.Body.Message }

// recorder collects an in-process API answer.
type recorder struct {
	h    http.Header
	code int
	body bytes.Buffer
}

func (rec *recorder) Header() http.Header         { return rec.h }
func (rec *recorder) Write(b []byte) (int, error) { return rec.body.Write(b) }
func (rec *recorder) WriteHeader(code int) {
	if rec.code == 0 {
		rec.code = code
	}
}

// apiRequest is r turned into a call of the REST API as s's operator
// (api.AsOperator: the API enforces their role and records their name).
// It keeps r's context, so the API checks the browser's connection as it
// checks any caller's.
func (u *UI) apiRequest(r *http.Request, s *session, method, path string, body any) (*http.Request, error) {
	var rd io.Reader = http.NoBody
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(r.Context(), method, path, rd)
	if err != nil {
		return nil, err
	}
	req.RemoteAddr, req.Host = r.RemoteAddr, r.Host
	req.Header.Set("Content-Type", "application/json")
	return api.AsOperator(req, s.Operator), nil
}

// call runs one REST API request in-process, as s's operator, and decodes
// its JSON answer.
func (u *UI) call(r *http.Request, s *session, method, path string, body, out any) error {
	req, err := u.apiRequest(r, s, method, path, body)
	if err != nil {
		return err
	}
	rec := &recorder{h: http.Header{}}
	u.API.ServeHTTP(rec, req)
	if rec.code == 0 {
		rec.code = http.StatusOK
	}
	if rec.code != http.StatusOK {
		e := &apiError{Status: rec.code}
		if json.Unmarshal(rec.body.Bytes(), e) != nil || e.Body.Message == "" {
			e.Body.Message = fmt.Sprintf("the API answered %d: %s", rec.code, bytes.TrimSpace(rec.body.Bytes()))
		}
		return e
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(rec.body.Bytes(), out)
}

func serverPath(s, rest string) string { return "/v1/servers/" + url.PathEscape(s) + rest }

func render(w http.ResponseWriter, status int, name string, p page) {
	var b bytes.Buffer
	if err := pages().ExecuteTemplate(&b, name, p); err != nil {
		http.Error(w, "rendering the page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = b.WriteTo(w)
}

// show renders a page for a session, or what kept it from its data.
func (u *UI) show(w http.ResponseWriter, s *session, name, title string, data any, err error) {
	// The title can name a tool, the problem and the flash quote the
	// daemon, which quotes servers: shown escaped (package display).
	p := page{Title: display.Escape(title), CSRF: s.CSRF, Operator: s.Operator, Flash: u.takeFlash(s), Data: data}
	if p.Flash != nil {
		p.Flash.Message = display.Text(p.Flash.Message)
	}
	status := http.StatusOK
	if err != nil {
		p.Problem, p.Data = display.Text(err.Error()), nil
		status = http.StatusBadGateway
		if e, ok := err.(*apiError); ok {
			status = e.Status
		}
	}
	render(w, status, name, p)
}

// overviewData is the servers, those that need a person first, and how
// many need what.
type overviewData struct {
	Status  api.Status
	Rows    []serverRow
	Summary []tally
}

func (u *UI) overview(w http.ResponseWriter, r *http.Request, s *session) {
	var d overviewData
	var ls []writes.Latch
	err := u.call(r, s, "GET", "/v1/status", nil, &d.Status)
	if err == nil {
		err = u.call(r, s, "GET", "/v1/writes", nil, &ls)
	}
	d.Rows, d.Summary = triage(d.Status.Servers, ls)
	u.show(w, s, "overview", "Servers", d, err)
}

type serverData struct {
	Server  api.Server
	Tools   []api.Tool // in review order
	Latches []writes.Latch
	// Admission is what admitting the quarantined server would do.
	Admission api.Admission
	// ByAll counts the tools "approve all pending and changed" approves;
	// HeldBack the held-back ones it passes over, Flagged those it passes
	// over for a high-severity finding.
	ByAll, HeldBack, Flagged int
}

func (u *UI) server(w http.ResponseWriter, r *http.Request, s *session) {
	var d serverData
	name := r.PathValue("s")
	err := u.call(r, s, "GET", serverPath(name, ""), nil, &d.Server)
	if err == nil {
		err = u.call(r, s, "GET", serverPath(name, "/tools"), nil, &d.Tools)
	}
	if err == nil {
		d.Latches, err = u.latchesOf(r, s, name)
	}
	reviewOrder(d.Tools)
	d.Admission = api.PlanAdmission(d.Tools, nil)
	for _, t := range d.Tools {
		switch {
		case byAll(t):
			d.ByAll++
		case api.Waiting(t) && t.HeldBack:
			d.HeldBack++
		case api.Waiting(t):
			d.Flagged++
		}
	}
	u.show(w, s, "server", name, d, err)
}

// toolData is one tool: a changed definition against the approved one
// (Fields), any other as it is (Definition).
type toolData struct {
	Server     api.Server
	Tool       api.Tool
	Fields     []fieldDiff
	Definition []fieldView
}

func (u *UI) tool(w http.ResponseWriter, r *http.Request, s *session) {
	name, tool := r.PathValue("s"), r.PathValue("t")
	var d toolData
	var tools []api.Tool
	err := u.call(r, s, "GET", serverPath(name, ""), nil, &d.Server)
	if err == nil {
		err = u.call(r, s, "GET", serverPath(name, "/tools"), nil, &tools)
	}
	if err == nil {
		i := slices.IndexFunc(tools, func(t api.Tool) bool { return t.Name == tool })
		if i < 0 {
			err = &apiError{Status: http.StatusNotFound}
			err.(*apiError).Body.Message = fmt.Sprintf("server %q has no tool %q", name, tool)
		} else {
			d.Tool = tools[i]
		}
	}
	if t := d.Tool; t.ApprovedHash != "" && t.ApprovedHash != t.CurrentHash {
		d.Fields = compareTool(t.Approved, t.Current)
	} else {
		d.Definition = defineTool(t.Current)
	}
	u.show(w, s, "tool", tool+" on "+name, d, err)
}

// latchesOf is the latched writes of one server.
func (u *UI) latchesOf(r *http.Request, s *session, server string) ([]writes.Latch, error) {
	var ls []writes.Latch
	err := u.call(r, s, "GET", "/v1/writes", nil, &ls)
	return slices.DeleteFunc(ls, func(l writes.Latch) bool { return l.Server != server }), err
}

func (u *UI) latches(w http.ResponseWriter, r *http.Request, s *session) {
	var ls []writes.Latch
	err := u.call(r, s, "GET", "/v1/writes", nil, &ls)
	u.show(w, s, "writes", "Latched writes", ls, err)
}

func (u *UI) confirmClear(w http.ResponseWriter, r *http.Request, s *session) {
	name := r.PathValue("s")
	ls, err := u.latchesOf(r, s, name)
	u.show(w, s, "confirm", "Clear "+name+"'s latch?", struct {
		Server     string
		Latches    []writes.Latch
		FromServer bool // asked from the server's page, which clearing returns to
	}{name, ls, r.URL.Query().Get("from") == "server"}, err)
}

type activityData struct {
	Server  string
	User    string // a caller (a user, or a client of the config's "clients")
	Limit   int
	Servers []string // to filter by
	Entries []activity.Entry
}

// activity shows recent calls, filtered by server and caller
// (?server=S&user=U&limit=N) as GET /v1/activity filters them.
func (u *UI) activity(w http.ResponseWriter, r *http.Request, s *session) {
	q := r.URL.Query()
	d := activityData{Server: q.Get("server"), User: q.Get("user"), Limit: 100}
	if n, err := strconv.Atoi(q.Get("limit")); err == nil && n > 0 {
		d.Limit = n
	}
	var st api.Status
	err := u.call(r, s, "GET", "/v1/status", nil, &st)
	for _, sv := range st.Servers {
		d.Servers = append(d.Servers, sv.Name)
	}
	if err == nil {
		v := url.Values{"limit": {strconv.Itoa(d.Limit)}}
		if d.Server != "" {
			v.Set("server", d.Server)
		}
		if d.User != "" {
			v.Set("user", d.User)
		}
		err = u.call(r, s, "GET", "/v1/activity?"+v.Encode(), nil, &d.Entries)
	}
	u.show(w, s, "activity", "Activity", d, err)
}

func (u *UI) upstreamSessions(w http.ResponseWriter, r *http.Request, s *session) {
	var ss []sessions.Info
	err := u.call(r, s, "GET", "/v1/sessions", nil, &ss)
	u.show(w, s, "sessions", "Upstream sessions", ss, err)
}

// events relays /v1/events, for the page's live updates.
func (u *UI) events(w http.ResponseWriter, r *http.Request, s *session) {
	req, err := u.apiRequest(r, s, "GET", "/v1/events", nil)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	u.API.ServeHTTP(w, req)
}

// done reports an API call's outcome on the next page.
func (u *UI) done(s *session, server string, err error, ok string) {
	f := &flash{OK: err == nil, Message: ok, Server: server}
	if err != nil {
		f.Message = err.Error()
		if e, is := err.(*apiError); is && e.Body.Details != nil {
			f.Message = fmt.Sprintf("Nothing was changed: %d tool(s) changed since this page showed them. Look at what changed, then decide again.", len(e.Body.Details.Mismatches))
			f.Mismatches = e.Body.Details.Mismatches
		}
	}
	u.setFlash(s, f)
}

// expected is the hashes the form showed for tools.
func expected(r *http.Request, tools []string) map[string]string {
	m := map[string]string{}
	for _, t := range tools {
		m[t] = r.PostForm.Get("hash." + t)
	}
	return m
}

func back(server string) string { return "/ui/servers/" + url.PathEscape(server) }

// backTo is where a decision's form returns: the page of the one tool it
// named when it was sent from there, else the server's page. Built from
// the path and the tool, never from a URL in the form.
func backTo(r *http.Request, server string, tools []string) string {
	if r.PostForm.Get("from") == "tool" && len(tools) == 1 {
		return back(server) + "/tools/" + url.PathEscape(tools[0])
	}
	return back(server)
}

// approved reports an approval's answer after lead, naming the tools it
// left because an operator held them back or for a high-severity finding,
// and how to approve them.
func approved(server, lead string, ans approval.Answer) string {
	msg := fmt.Sprintf("%s; %d still pending, %d still changed.", lead, ans.StillPending, ans.StillChanged)
	if len(ans.HeldBack) > 0 {
		msg += fmt.Sprintf(" Left held back: %s. An operator held these back earlier (warden review approve %s --all --except …) and approving all passes over held-back tools: approve one by name (tick it and press Approve selected, or use the button on its page).",
			strings.Join(ans.HeldBack, ", "), server)
	}
	if len(ans.Flagged) > 0 {
		msg += fmt.Sprintf(" Left pending, with a high-severity finding: %s. Approving all passes over these: read what the scanner found on each one's page, then approve one by name (tick it and press Approve selected, or use the button on its page), or all with: warden review approve %s --all --force.",
			strings.Join(ans.Flagged, ", "), server)
	}
	return msg
}

func (u *UI) approve(r *http.Request, s *session) string {
	name := r.PathValue("s")
	req := approval.ToolApproval{Tools: r.PostForm["tool"]}
	if r.PostForm.Get("all") != "" {
		// All that the page showed waiting, as it showed them: a tool
		// that changed meanwhile answers 409.
		req = approval.ToolApproval{All: true, ExpectedHashes: expected(r, r.PostForm["shown"])}
	} else {
		req.ExpectedHashes = expected(r, req.Tools)
	}
	if len(req.Tools) == 0 && !req.All {
		u.done(s, name, fmt.Errorf("no tool selected: tick the tools to approve"), "")
		return back(name)
	}
	var ans approval.Answer
	err := u.call(r, s, "POST", serverPath(name, "/tools/approve"), req, &ans)
	u.done(s, name, err, approved(name, fmt.Sprintf("Approved %d tool(s)", ans.ApprovedCount), ans))
	return backTo(r, name, req.Tools)
}

func (u *UI) block(r *http.Request, s *session) string {
	name := r.PathValue("s")
	tools := r.PostForm["tool"]
	if len(tools) == 0 {
		u.done(s, name, fmt.Errorf("no tool selected: tick the tools to block"), "")
		return back(name)
	}
	var ans approval.Answer
	err := u.call(r, s, "POST", serverPath(name, "/tools/block"), api.BlockRequest{Tools: tools}, &ans)
	u.done(s, name, err, fmt.Sprintf("Blocked %d tool(s): they are neither listed nor run.", ans.BlockedCount))
	return backTo(r, name, tools)
}

func (u *UI) admit(r *http.Request, s *session) string {
	name := r.PathValue("s")
	var ans approval.Answer
	req := approval.ServerApproval{ExpectedHashes: expected(r, r.PostForm["shown"])}
	err := u.call(r, s, "POST", serverPath(name, "/approve"), req, &ans)
	u.done(s, name, err, approved(name, fmt.Sprintf("Admitted %s, approving %d tool(s)", name, ans.ApprovedCount), ans))
	return back(name)
}

func (u *UI) quarantine(r *http.Request, s *session) string {
	name := r.PathValue("s")
	err := u.call(r, s, "POST", serverPath(name, "/quarantine"), nil, nil)
	u.done(s, name, err, "Quarantined "+name+": none of its tools are listed or run until it is admitted again.")
	return back(name)
}

func (u *UI) clear(r *http.Request, s *session) string {
	name := r.PathValue("s")
	var res api.Cleared
	err := u.call(r, s, "DELETE", "/v1/writes/"+url.PathEscape(name), nil, &res)
	msg := "Cleared " + name + "'s latch: writes are allowed again."
	if err == nil && !res.Cleared {
		msg = name + " had no latched writes; nothing to clear."
	}
	u.done(s, name, err, msg)
	// Back to the page it was asked from, built from the path: the
	// server's page, else the list of latches.
	if r.PostForm.Get("from") == "server" {
		return back(name)
	}
	return "/ui/writes"
}
