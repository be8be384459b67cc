// Package canon writes canonical JSON and its SHA-256, the form Warden hashes
// tool definitions and call arguments in. Canonical means: object keys sorted,
// no insignificant whitespace, numbers as written, no HTML escaping. Two values
// that differ only in key order or spacing hash the same.
package canon

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// JSON returns the canonical encoding of v. Raw JSON input (json.RawMessage or
// []byte holding JSON) is re-parsed so key order and spacing do not matter;
// a Raw is canonical already.
func JSON(v any) ([]byte, error) {
	var raw []byte
	switch x := v.(type) {
	case Raw:
		if len(x) > 0 {
			return x, nil
		}
	case json.RawMessage:
		raw = x
	case []byte:
		raw = x
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		raw = b
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = []byte("null")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var generic any
	if err := dec.Decode(&generic); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(generic); err != nil { // maps encode with sorted keys
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// SHA256 returns the hex SHA-256 of v's canonical JSON.
func SHA256(v any) (string, error) {
	b, err := JSON(v)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// ArgsSHA256 returns the hex SHA-256 of a call's arguments in canonical form:
// what Warden records of arguments, never the arguments themselves. Absent
// arguments (empty, whitespace or JSON null) hash as the empty object "{}",
// because MCP treats a call without arguments and a call with {} alike.
// Arguments that are not valid JSON hash as their raw bytes.
func ArgsSHA256(raw []byte) string {
	b, err := JSON(raw)
	switch {
	case err != nil:
		b = raw
	case string(b) == "null":
		b = []byte("{}")
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
