package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenmcp/warden/approval"
	"github.com/wardenmcp/warden/config"
	"github.com/wardenmcp/warden/internal/canon"
)

// inventoryPeer keeps the last listing it was handed.
type inventoryPeer struct {
	nopPeer
	got chan *Inventory
}

func (p inventoryPeer) Inventory(_ string, inv *Inventory) { p.got <- inv }

// A listing reaches the peer with every schema as the upstream sent it (in
// canonical form, canon.Raw),
// those holdSchemas kept from the SDK client's check included, and the
// SDK client still drops a tool whose x-mcp-header annotation it refuses
// (here on an array, at the second level of properties).
func TestListingKeepsSchemasAndTheSDKsCheck(t *testing.T) {
	tools := map[string]string{
		"plain":    `{"type":"object","properties":{"q":{"type":"string"},"filter":{"type":"object","properties":{"state":{"type":"string","enum":["open","closed"]}}}},"required":["q"]}`,
		"bound":    `{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`,
		"misbound": `{"type":"object","properties":{"filter":{"type":"object","properties":{"labels":{"type":"array","x-mcp-header":"Labels"}}}}}`,
	}
	list := `[`
	for _, name := range []string{"plain", "bound", "misbound"} {
		if name != "plain" {
			list += ","
		}
		list += fmt.Sprintf(`{"name":%q,"inputSchema":%s}`, name, tools[name])
	}
	list += `]`
	up := toolsUpstream(t, "2025-11-25", list, nil)
	peer := inventoryPeer{got: make(chan *Inventory, 4)}
	c := Start(&config.Server{Name: "up", URL: up.URL, Transport: config.TransportHTTP, CallTimeout: 10 * time.Second}, Options{Peer: peer})
	defer c.Stop()
	if err := c.Ready(context.Background()); err != nil {
		t.Fatal(err)
	}
	var inv *Inventory
	select {
	case inv = <-peer.got:
	case <-time.After(10 * time.Second):
		t.Fatal("no listing")
	}
	var names []string
	for _, tool := range inv.Tools {
		names = append(names, tool.Name)
		want, err := canon.JSON([]byte(tools[tool.Name]))
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := tool.InputSchema.(canon.Raw); !ok || string(got) != string(want) {
			t.Errorf("%s: schema %#v, want canon.Raw %s", tool.Name, tool.InputSchema, want)
		}
	}
	if !reflect.DeepEqual(names, []string{"plain", "bound"}) {
		t.Errorf("listed %q, want plain and bound (misbound dropped by the SDK's check)", names)
	}
}

// toolsUpstream serves an HTTP upstream of protocol version that lists
// tools (a JSON array) and answers each tools/call with "ok", after
// onCall, if any, has seen the request.
func toolsUpstream(t *testing.T, version, tools string, onCall func(*http.Request)) *httptest.Server {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "no standalone stream", http.StatusMethodNotAllowed)
			return
		}
		var m rpcMessage
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Mcp-Session-Id", "s1")
		w.Header().Set("Content-Type", "application/json")
		switch m.Method {
		case "initialize":
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":%q,"capabilities":{"tools":{}},"serverInfo":{"name":"up","version":"1"}}}`, m.ID, version)
		case "server/discover": // a server of 2025's initialize only
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`, m.ID)
		case "tools/list":
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"tools":%s}}`, m.ID, tools)
		case "tools/call":
			if onCall != nil {
				onCall(r)
			}
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"ok"}]}}`, m.ID)
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	t.Cleanup(up.Close)
	return up
}

// Of two listing passes, the set of tools that bind headers is the later
// pass's, whichever finishes last: a stale set would send a tool that binds
// headers down the direct path, without them.
func TestHeaderBoundKeepsTheLaterPass(t *testing.T) {
	l := &lister{}
	later := &boundTools{seq: 2, tools: map[string]bool{"bound": true}}
	l.setHeaderBound(later)
	l.setHeaderBound(&boundTools{seq: 1, tools: map[string]bool{}})
	if !l.bindsHeaders("bound") {
		t.Fatal("an earlier pass that finished last replaced the later pass's set")
	}
	l.setHeaderBound(&boundTools{seq: 3, tools: map[string]bool{}})
	if l.bindsHeaders("bound") {
		t.Fatal("a later pass's set was not kept")
	}
}

// A list_changed that comes while no session is live (the first listing
// of a connection) is not lost: it is listed once, when run resumes the
// lister on the live session, and not again.
func TestListChangedWithoutSessionWaitsForOne(t *testing.T) {
	up := toolsUpstream(t, "2025-11-25", `[{"name":"t","inputSchema":{"type":"object"}}]`, nil)
	client := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: up.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	var live atomic.Pointer[mcp.ClientSession]
	var cfg atomic.Pointer[config.Server]
	cfg.Store(&config.Server{Name: "up", CallTimeout: 10 * time.Second})
	peer := inventoryPeer{got: make(chan *Inventory, 4)}
	l := &lister{name: "up", ctx: context.Background(), cfg: &cfg, log: slog.Default(), peer: peer, live: live.Load}

	l.changed()
	l.resume()
	select {
	case <-peer.got:
		t.Fatal("listed without a live session")
	case <-time.After(50 * time.Millisecond):
	}
	live.Store(cs)
	l.resume()
	select {
	case inv := <-peer.got:
		if inv.Tool("t") == nil {
			t.Fatalf("listed %v, want t", inv.Tools)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the list_changed was lost")
	}
	l.resume()
	select {
	case <-peer.got:
		t.Fatal("listed twice for one list_changed")
	case <-time.After(50 * time.Millisecond):
	}
}

// An inventory's copy of a tool (kept) has the pin the tool as listed
// has, whatever its schemas: approval hashes a canon.Raw as the value it
// encodes.
func TestKeptKeepsEveryPin(t *testing.T) {
	var tools []*mcp.Tool
	for _, def := range []string{
		`{"name":"a","inputSchema":{"type":"object","properties":{"n":{"type":"number","minimum":1.0,"maximum":1e21,"multipleOf":1e-7,"default":-0}}}}`,
		`{"name":"b","description":"<&> \u2028 é \ud800","inputSchema":{"type":"object","properties":{"s":{"enum":["<&>","\u2029","\u0000"]}}},"outputSchema":{"type":"object"}}`,
		`{"name":"c","inputSchema":{"type":"object"},"outputSchema":null}`,
		`{"name":"d","inputSchema":{},"outputSchema":{"type":"object","properties":{}}}`,
		`{"name":"e","inputSchema":{"type":"object","properties":{"r":{"type":"string","x-mcp-header":"Region"}}},"annotations":{"readOnlyHint":true}}`,
	} {
		var tool mcp.Tool
		if err := json.Unmarshal([]byte(def), &tool); err != nil {
			t.Fatal(err)
		}
		tools = append(tools, &tool)
	}
	held := *tools[0]
	held.InputSchema = heldSchema{tools[0].InputSchema}
	tools = append(tools, &held,
		&mcp.Tool{Name: "typed-nil", InputSchema: map[string]any(nil), OutputSchema: []any(nil)},
		&mcp.Tool{Name: "raw", InputSchema: json.RawMessage(` {"type" : "object"} `)})
	var scratch []byte
	for _, tool := range tools {
		kept, _ := kept(tool, &scratch)
		want := tool
		if h, ok := tool.InputSchema.(heldSchema); ok {
			unheld := *tool
			unheld.InputSchema = h.schema
			want = &unheld
		}
		if got, want := must(approval.Hash(kept)), must(approval.Hash(want)); got != want {
			t.Errorf("%s: kept %s, listed %s", tool.Name, got, want)
		}
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
