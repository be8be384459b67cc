package upstream

import (
	"net/http/httptest"
	"testing"
)

// A task request goes upstream with Mcp-Name naming its task (the SDK's
// client names none), on a copy: the request given is left as it is.
func TestNameTask(t *testing.T) {
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"T1"}}`)
	req := httptest.NewRequest("POST", "http://upstream/mcp", nil)
	named := nameTask(req, body)
	if named.Header.Get("Mcp-Name") != "T1" || req.Header.Get("Mcp-Name") != "" {
		t.Fatalf("Mcp-Name %q (the original's %q), want T1 on the copy alone", named.Header.Get("Mcp-Name"), req.Header.Get("Mcp-Name"))
	}
	req.Header.Set("Mcp-Name", "T0")
	if got := nameTask(req, body).Header.Get("Mcp-Name"); got != "T0" {
		t.Errorf("a name already set became %q", got)
	}
}
