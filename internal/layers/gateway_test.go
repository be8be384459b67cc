package layers

import (
	"reflect"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/gateway"
	"github.com/wardenmcp/warden/upstream"
)

// TestGatewayHandsOutNoConnection checks the values the gateway gives those
// above it, not only the imports: no exported method of the gateway, nor
// of any type its methods hand out, takes or gives a type of upstream or
// an upstream session (*mcp.ClientSession), however deep in a struct,
// pointer, slice, map or func. The gateway is upstream's Peer through an
// unexported type, so no method is left out.
func TestGatewayHandsOutNoConnection(t *testing.T) {
	w := walker{seen: map[reflect.Type]bool{}, t: t}
	w.walk(reflect.TypeFor[*gateway.Gateway](), "")
	if !w.seen[reflect.TypeFor[gateway.Upstream]()] {
		t.Error("the walk did not reach gateway.Upstream: is it still handed out?")
	}
}

// walker visits the types reachable from a gateway method's signature.
type walker struct {
	seen map[reflect.Type]bool
	t    *testing.T
}

var (
	upstreamPkg = reflect.TypeFor[upstream.Conn]().PkgPath()
	gatewayPkg  = reflect.TypeFor[gateway.Gateway]().PkgPath()
	session     = reflect.TypeFor[mcp.ClientSession]()
)

func (w walker) walk(t reflect.Type, where string) {
	if w.seen[t] {
		return
	}
	w.seen[t] = true
	if t.PkgPath() == upstreamPkg || t == session {
		w.t.Errorf("%s hands out %s", where, t)
		return
	}
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Chan:
		w.walk(t.Elem(), where)
	case reflect.Map:
		w.walk(t.Key(), where)
		w.walk(t.Elem(), where)
	case reflect.Func:
		for i := range t.NumIn() {
			w.walk(t.In(i), where)
		}
		for i := range t.NumOut() {
			w.walk(t.Out(i), where)
		}
	case reflect.Struct:
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() {
				w.walk(f.Type, where+"."+f.Name)
			}
		}
	}
	if t.PkgPath() == gatewayPkg || (t.Kind() == reflect.Pointer && t.Elem().PkgPath() == gatewayPkg) {
		for i := range t.NumMethod() {
			m := t.Method(i)
			w.walk(m.Type, t.String()+"."+m.Name)
		}
	}
}
