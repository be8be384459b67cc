package approval

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/internal/canon"
)

// Hash returns a tool's pin, "sha256:<hex>" over the canonical JSON
// (canon.JSON) of its name, title, description, inputSchema, outputSchema,
// annotations, _meta and icons: every field of mcp.Tool, so everything a
// client is passed of a tool is pinned (a changed _meta["ui/resourceUri"] or
// icon URL is a change to review like a changed description).
//
// Absent fields are omitted, never written as null: an empty title or
// description, a nil or JSON-null schema, nil annotations. Within annotations
// readOnlyHint and idempotentHint appear only when true (a client cannot tell
// false from absent), the pointer hints whenever set, and annotations with
// nothing set are omitted; so are an empty _meta and empty icons, which the
// SDK does not send either. So the pin depends only on what the server said,
// not on the SDK's marshalling options, and a tool without _meta and icons
// keeps the pin it had before they were covered.
func Hash(t *mcp.Tool) (string, error) {
	h, _, err := hashTool(t)
	return h, err
}

// hashTool returns the pin and the canonical definition it covers; records
// keep the definition for diffs, so one encoding per tool serves both.
func hashTool(t *mcp.Tool) (string, json.RawMessage, error) {
	if t == nil {
		return "", nil, errors.New("nil tool")
	}
	e := encoders.Get().(*encoder)
	defer encoders.Put(e)
	e.buf = e.buf[:0]
	if err := e.definition(t); err != nil {
		return "", nil, fmt.Errorf("tool %q: %w", t.Name, err)
	}
	def := slices.Clone(e.buf)
	sum := sha256.Sum256(def)
	h := make([]byte, len("sha256:")+hex.EncodedLen(len(sum)))
	copy(h, "sha256:")
	hex.Encode(h[len("sha256:"):], sum[:])
	return string(h), def, nil
}

// encoder writes a definition's canonical JSON (canon.Append).
type encoder struct{ buf []byte }

var encoders = sync.Pool{New: func() any { return new(encoder) }}

// definition writes the hashed object; its keys are written in sorted order.
func (e *encoder) definition(t *mcp.Tool) error {
	e.buf = append(e.buf, '{')
	if len(t.Meta) > 0 {
		e.buf = append(e.buf, `"_meta":`...)
		if err := e.value(map[string]any(t.Meta)); err != nil {
			return fmt.Errorf("_meta: %w", err)
		}
		e.buf = append(e.buf, ',')
	}
	if a := t.Annotations; a != nil && (a.DestructiveHint != nil || a.IdempotentHint ||
		a.OpenWorldHint != nil || a.ReadOnlyHint || a.Title != "") {
		e.buf = append(e.buf, `"annotations":{`...)
		n := len(e.buf)
		sep := func() {
			if len(e.buf) > n {
				e.buf = append(e.buf, ',')
			}
		}
		if a.DestructiveHint != nil {
			sep()
			e.buf = strconv.AppendBool(append(e.buf, `"destructiveHint":`...), *a.DestructiveHint)
		}
		if a.IdempotentHint {
			sep()
			e.buf = append(e.buf, `"idempotentHint":true`...)
		}
		if a.OpenWorldHint != nil {
			sep()
			e.buf = strconv.AppendBool(append(e.buf, `"openWorldHint":`...), *a.OpenWorldHint)
		}
		if a.ReadOnlyHint {
			sep()
			e.buf = append(e.buf, `"readOnlyHint":true`...)
		}
		if a.Title != "" {
			sep()
			e.buf = canon.AppendString(append(e.buf, `"title":`...), a.Title)
		}
		e.buf = append(e.buf, "},"...)
	}
	if t.Description != "" {
		e.buf = append(canon.AppendString(append(e.buf, `"description":`...), t.Description), ',')
	}
	if len(t.Icons) > 0 {
		e.buf = append(e.buf, `"icons":`...)
		if err := e.value(t.Icons); err != nil {
			return fmt.Errorf("icons: %w", err)
		}
		e.buf = append(e.buf, ',')
	}
	if !absent(t.InputSchema) {
		e.buf = append(e.buf, `"inputSchema":`...)
		if err := e.value(t.InputSchema); err != nil {
			return fmt.Errorf("inputSchema: %w", err)
		}
		e.buf = append(e.buf, ',')
	}
	e.buf = canon.AppendString(append(e.buf, `"name":`...), t.Name)
	if !absent(t.OutputSchema) {
		e.buf = append(e.buf, `,"outputSchema":`...)
		if err := e.value(t.OutputSchema); err != nil {
			return fmt.Errorf("outputSchema: %w", err)
		}
	}
	if t.Title != "" {
		e.buf = canon.AppendString(append(e.buf, `,"title":`...), t.Title)
	}
	e.buf = append(e.buf, '}')
	return nil
}

// value appends v canonically.
func (e *encoder) value(v any) (err error) {
	e.buf, err = canon.Append(e.buf, v)
	return err
}

// absent reports whether a schema value would encode as nothing or null.
func absent(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case json.RawMessage:
		t := bytes.TrimSpace(x)
		return len(t) == 0 || string(t) == "null"
	case canon.Raw:
		return len(x) == 0 || string(x) == "null"
	case map[string]any:
		return x == nil
	case []any:
		return x == nil
	case string, float64, bool:
		return false
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Interface, reflect.Slice:
		return rv.IsNil()
	}
	return false
}
