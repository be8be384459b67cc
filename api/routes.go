package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/wardenmcp/warden/activity"
	"github.com/wardenmcp/warden/approval"
	"github.com/wardenmcp/warden/callers"
	"github.com/wardenmcp/warden/gateway"
	"github.com/wardenmcp/warden/guardrails"
	"github.com/wardenmcp/warden/store"
	"github.com/wardenmcp/warden/writes"
)

func (a *handler) serverInfo(sc ServerConfig) Server {
	s := Server{Name: sc.Name, Transport: sc.Transport, Target: sc.Target, Trusted: sc.Trusted, Disabled: sc.Disabled,
		State: a.Gateway.Connection(sc.Name), ConfigError: sc.ConfigError}
	if st, ok := a.Approvals.Server(sc.Name); ok {
		s.Quarantined, s.DecidedBy, s.Tools = st.Quarantined, st.DecidedBy, st.Counts
	}
	s.ToolTokens = a.Gateway.ToolTokens(sc.Name)
	return s
}

func (a *handler) configured(w http.ResponseWriter, name string) (ServerConfig, bool) {
	cfg := a.Config()
	for _, s := range cfg.Servers {
		if s.Name == name {
			return s, true
		}
	}
	names := make([]string, 0, len(cfg.Servers))
	for _, s := range cfg.Servers {
		names = append(names, s.Name)
	}
	fail(w, http.StatusNotFound, "unknown_server", fmt.Sprintf("no server %q in %s (configured: %v); add one with: warden servers add", name, cfg.Path, names))
	return ServerConfig{}, false
}

// decidable is configured for the routes that need the server loaded
// (decisions about its tools, its OAuth): one whose entry never loaded has
// no tools to decide about and no URL to log in to yet.
func (a *handler) decidable(w http.ResponseWriter, name string) (ServerConfig, bool) {
	sc, ok := a.configured(w, name)
	if ok && sc.ConfigError != "" && sc.Transport == "" {
		fail(w, http.StatusConflict, "server_not_loaded", fmt.Sprintf("server %q is in the config file but its entry cannot be loaded: %s", name, sc.ConfigError))
		return sc, false
	}
	return sc, ok
}

func (a *handler) status(w http.ResponseWriter, r *http.Request) {
	cfg := a.Config()
	st := Status{Version: a.Version, UptimeSeconds: time.Since(a.Started).Seconds(), ConfigPath: cfg.Path,
		Listen: cfg.Listen, ReloadError: cfg.ReloadError, Servers: []Server{}}
	all := 0
	for _, sc := range cfg.Servers {
		info := a.serverInfo(sc)
		all += info.ToolTokens
		st.Servers = append(st.Servers, info)
	}
	st.ViewTokens = map[string]int{"all": all, "search": a.SearchTokens}
	if a.SharedStore {
		var err error
		if st.Instances, err = a.Instances(r.Context()); err != nil {
			storeError(w, err)
			return
		}
	}
	reply(w, http.StatusOK, st)
}

func (a *handler) instances(w http.ResponseWriter, r *http.Request) {
	out, err := a.Instances(r.Context())
	if err != nil {
		storeError(w, err)
		return
	}
	reply(w, http.StatusOK, out)
}

func (a *handler) servers(w http.ResponseWriter, r *http.Request) {
	out := []Server{}
	for _, sc := range a.Config().Servers {
		out = append(out, a.serverInfo(sc))
	}
	reply(w, http.StatusOK, out)
}

func (a *handler) server(w http.ResponseWriter, r *http.Request) {
	if sc, ok := a.configured(w, r.PathValue("s")); ok {
		reply(w, http.StatusOK, a.serverInfo(sc))
	}
}

func (a *handler) tools(w http.ResponseWriter, r *http.Request) {
	sc, ok := a.configured(w, r.PathValue("s"))
	if !ok {
		return
	}
	definitions := true
	if v := r.URL.Query().Get("definitions"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			fail(w, http.StatusBadRequest, "bad_request", fmt.Sprintf("definitions=%q: give true or false", v))
			return
		}
		definitions = b
	}
	classes := map[string]string{}
	for _, t := range a.Gateway.Tools(sc.Name) {
		classes[t.Name] = string(t.Class)
	}
	out := []Tool{}
	quarantined := a.Approvals.Quarantined(sc.Name)
	for _, rec := range a.Approvals.Tools(sc.Name) {
		class := classes[rec.Name]
		if class == "" {
			class = string(writes.Classify("", rec.Annotations))
		}
		t := Tool{Name: rec.Name, Class: class, Status: rec.Status, Present: rec.Present, Hidden: sc.Hidden[rec.Name], HeldBack: rec.HeldBack, HeldBackAt: rec.HeldBackAt, Invalid: rec.Invalid, ServerQuarantined: quarantined,
			ApprovedHash: rec.ApprovedHash, CurrentHash: rec.CurrentHash, Annotations: rec.Annotations,
			ApprovedBy: rec.ApprovedBy, ApprovedAt: rec.ApprovedAt, DecidedBy: rec.DecidedBy, Findings: rec.Findings, Reason: rec.Reason}
		if t.Findings == nil {
			t.Findings = []guardrails.Finding{}
		}
		if definitions {
			t.Current, t.Approved = rec.Current, rec.Approved
		}
		out = append(out, t)
	}
	reply(w, http.StatusOK, out)
}

func (a *handler) approveServer(w http.ResponseWriter, r *http.Request) {
	sc, ok := a.decidable(w, r.PathValue("s"))
	var req approval.ServerApproval
	if !ok || !decode(w, r, &req) {
		return
	}
	req.By = operatorOf(r).Name
	ans, err := a.Approvals.ApproveServer(sc.Name, req)
	if err != nil {
		decisionError(w, err)
		return
	}
	reply(w, http.StatusOK, ans)
}

func (a *handler) quarantine(w http.ResponseWriter, r *http.Request) {
	sc, ok := a.decidable(w, r.PathValue("s"))
	if !ok {
		return
	}
	if err := a.Approvals.Quarantine(sc.Name, operatorOf(r).Name); err != nil {
		decisionError(w, err)
		return
	}
	reply(w, http.StatusOK, a.serverInfo(sc))
}

func (a *handler) approveTools(w http.ResponseWriter, r *http.Request) {
	sc, ok := a.decidable(w, r.PathValue("s"))
	var req approval.ToolApproval
	if !ok || !decode(w, r, &req) {
		return
	}
	req.By = operatorOf(r).Name
	ans, err := a.Approvals.ApproveTools(sc.Name, req)
	if err != nil {
		decisionError(w, err)
		return
	}
	reply(w, http.StatusOK, ans)
}

func (a *handler) block(w http.ResponseWriter, r *http.Request) {
	sc, ok := a.decidable(w, r.PathValue("s"))
	var req BlockRequest
	if !ok || !decode(w, r, &req) {
		return
	}
	ans, err := a.Approvals.Block(sc.Name, req.Tools, operatorOf(r).Name)
	if err != nil {
		decisionError(w, err)
		return
	}
	reply(w, http.StatusOK, ans)
}

// call runs a tool for the operator, through the same call path and policy
// as an agent's call.
func (a *handler) call(w http.ResponseWriter, r *http.Request) {
	sc, ok := a.configured(w, r.PathValue("s"))
	var req CallRequest
	if !ok || !decode(w, r, &req) {
		return
	}
	if req.Tool == "" {
		fail(w, http.StatusBadRequest, "bad_request", fmt.Sprintf(`request body: "tool" is missing: send {"tool": "NAME", "arguments": {...}}; see the tools with: warden tools %s`, sc.Name))
		return
	}
	if args := bytes.TrimSpace(req.Arguments); len(args) > 0 && args[0] != '{' && string(args) != "null" {
		fail(w, http.StatusBadRequest, "bad_request", `request body: "arguments" must be a JSON object, such as {"key": "value"}`)
		return
	}
	// The operator is unlimited by profiles; activity and a latch name them.
	op := operatorOf(r).Name
	res, err := a.Gateway.CallTool(r.Context(), gateway.Call{Server: sc.Name, Tool: req.Tool, Args: req.Arguments, Surface: "cli",
		Who: callers.Caller{Identity: callers.Identity{User: op}}, Caller: writes.Caller{User: op}})
	var unknown *gateway.UnknownToolError
	var werr *jsonrpc.Error
	switch {
	case errors.As(err, &unknown):
		fail(w, http.StatusNotFound, "unknown_tool", fmt.Sprintf("server %q has no tool %q that can be called; nothing was sent. See its tools with: warden tools %s", sc.Name, req.Tool, sc.Name))
		return
	case errors.As(err, &werr) && werr.Code == jsonrpc.CodeInvalidParams:
		// Arguments the tool does not take: the request's fault, not the
		// upstream's.
		fail(w, http.StatusBadRequest, "invalid_params", err.Error())
		return
	case err != nil:
		fail(w, http.StatusBadGateway, "upstream_error", err.Error())
		return
	}
	reply(w, http.StatusOK, res)
}

// DefaultLogLines is how many of a log's last lines GET
// /v1/servers/{s}/logs answers when the request does not say.
const DefaultLogLines = 100

// logs answers a stdio server's stderr log as text: its last lines
// (?lines=N, 0 for the whole file), then with ?follow=1 what the server
// writes next, until the client goes away.
func (a *handler) logs(w http.ResponseWriter, r *http.Request) {
	sc, ok := a.configured(w, r.PathValue("s"))
	if !ok {
		return
	}
	if sc.Transport != "stdio" {
		fail(w, http.StatusNotFound, "no_log", fmt.Sprintf("server %q is reached over %s, not started by Warden, so it has no stderr log; its connection errors show in: warden status", sc.Name, sc.Transport))
		return
	}
	q := r.URL.Query()
	lines := DefaultLogLines
	if v := q.Get("lines"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			fail(w, http.StatusBadRequest, "bad_request", fmt.Sprintf("lines=%q: give a number of lines, or 0 for the whole log", v))
			return
		}
		lines = n
	}
	follow, _ := strconv.ParseBool(q.Get("follow"))
	lf, err := a.Logs(sc.Name)
	if err != nil {
		fail(w, http.StatusInternalServerError, "log_error", err.Error())
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	flush := func() {}
	if fl, ok := w.(http.Flusher); ok {
		flush = fl.Flush
	}
	// Once the answer has begun, an error can only end it.
	_ = lf.Copy(r.Context(), w, lines, follow, flush)
}

func (a *handler) writes(w http.ResponseWriter, r *http.Request) {
	out := a.Writes.List()
	if out == nil {
		out = []writes.Latch{}
	}
	reply(w, http.StatusOK, out)
}

func (a *handler) clearWrites(w http.ResponseWriter, r *http.Request) {
	ls, err := a.Writes.Clear(r.PathValue("s"), operatorOf(r).Name)
	if err != nil {
		storeError(w, err)
		return
	}
	if len(ls) == 0 {
		// A latch outlives its server's config entry; with neither, the
		// name is most likely a typo.
		if _, known := a.configured(w, r.PathValue("s")); !known {
			return
		}
	}
	res := Cleared{Cleared: len(ls) > 0}
	if res.Cleared {
		res.Latch, res.Latches = ls[0], ls
	}
	reply(w, http.StatusOK, res)
}

func (a *handler) sessions(w http.ResponseWriter, r *http.Request) {
	reply(w, http.StatusOK, a.Sessions())
}

func (a *handler) activity(w http.ResponseWriter, r *http.Request) {
	server := r.URL.Query().Get("server")
	entries, err := a.Activity.Query(activity.Filter{Server: server, User: r.URL.Query().Get("user")}, queryInt(r, "limit", 100))
	if err != nil {
		storeError(w, err)
		return
	}
	if server != "" && len(entries) == 0 {
		// Calls outlive their server's config entry; with neither, the
		// name is most likely a typo.
		if _, known := a.configured(w, server); !known {
			return
		}
	}
	reply(w, http.StatusOK, entries)
}

func (a *handler) decisions(w http.ResponseWriter, r *http.Request) {
	server := r.URL.Query().Get("server")
	out, err := a.Decisions(r.Context(), server, queryInt(r, "limit", 100))
	if err != nil {
		storeError(w, err)
		return
	}
	if server != "" && len(out) == 0 {
		if _, known := a.configured(w, server); !known {
			return
		}
	}
	reply(w, http.StatusOK, out)
}

// events streams server-sent events until the client goes away.
func (a *handler) events(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		fail(w, http.StatusInternalServerError, "no_streaming", "the connection cannot stream")
		return
	}
	ch, stop := a.Events.Subscribe()
	defer stop()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, ": warden events\n\n")
	fl.Flush()
	keepalive := time.NewTicker(15 * time.Second)
	defer keepalive.Stop()
	for {
		select {
		case e := <-ch:
			b, _ := json.Marshal(e)
			fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", e.Seq, e.Type, b)
		case <-keepalive.C:
			fmt.Fprint(w, ": keepalive\n\n")
		case <-r.Context().Done():
			return
		}
		fl.Flush()
	}
}

// UILoginTTL is how long a code of POST /v1/ui/login can be exchanged.
const UILoginTTL = 5 * time.Minute

func (a *handler) uiLogin(w http.ResponseWriter, r *http.Request) {
	if a.UILogin == nil {
		fail(w, http.StatusNotFound, "not_found", "this Warden serves no review page")
		return
	}
	code, err := a.UILogin()
	switch {
	case errors.Is(err, store.ErrUnavailable): // the code is kept in the store
		storeError(w, err)
		return
	case err != nil:
		fail(w, http.StatusInternalServerError, "ui_error", err.Error())
		return
	}
	reply(w, http.StatusOK, UILogin{Code: code, Path: "/ui/login?code=" + code, ExpiresAt: time.Now().Add(UILoginTTL).UTC()})
}
