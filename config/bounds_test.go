package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A file nested deeper than MaxDepth, or larger than MaxFileSize, is refused
// with an *Error before a parser recurses into it (a million levels
// overflowed the stack); brackets in strings and comments do not count.
func TestBounds(t *testing.T) {
	deep := func(n int) string { return `{"mcpServers": ` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}` }
	within := []string{
		deep(MaxDepth - 1),
		`{"mcpServers": {"a": {"command": "x", "args": ["` + strings.Repeat(`[{\"`, 10000) + `"]}}} // ` + strings.Repeat("[", 1000),
		"/* " + strings.Repeat("{", 1000) + " */ {\"mcpServers\": {}}",
	}
	for _, data := range within {
		if _, err := Parse("/c.json", []byte(data), nil); err != nil && strings.Contains(err.Error(), "nested more than") {
			t.Errorf("refused as too deep: %.60s...: %v", data, err)
		}
	}
	for _, data := range []string{deep(MaxDepth + 1), deep(1_500_000), `{"a": "\\"` + strings.Repeat("[", 100)} {
		_, err := Parse("/c.json", []byte(data), nil)
		var ce *Error
		if !errors.As(err, &ce) || ce.Line != 1 || !strings.Contains(err.Error(), "nested more than 64 deep") {
			t.Errorf("%.40s...: %v, want an *Error naming the depth limit and where", data, err)
		}
		if _, err := ParseHost("/h.json", []byte(data)); err == nil || !strings.Contains(err.Error(), "nested more than 64 deep") {
			t.Errorf("ParseHost %.40s...: %v", data, err)
		}
	}

	for _, toml := range []string{
		"[mcp_servers.a]\ncommand = \"x\"\nargs = " + strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth),
		"[mcp_servers.x" + strings.Repeat(".a", 100_000) + "]\nk = 1\n",
		"[mcp_servers.x]\ncommand = \"x\"\nenv" + strings.Repeat(".a", 100_000) + " = 1\n",
		"[mcp_servers.x]\nenv = " + strings.Repeat("{a=", 100) + "1" + strings.Repeat("}", 100),
	} {
		if _, err := ParseCodex("/c.toml", []byte(toml)); err == nil || !strings.Contains(err.Error(), "nested more than 64 deep") {
			t.Errorf("deep TOML %.60s...: %.200v", toml, err)
		}
	}
	if _, err := ParseCodex("/c.toml", []byte("a = "+strings.Repeat("[", 1_000_000))); err == nil || !strings.Contains(err.Error(), "larger than 256 KiB") {
		t.Errorf("a TOML file of 1 MB: %.200v", err)
	}
	if _, err := ParseCodex("/c.toml", []byte("[mcp_servers.a]\ncommand = \"x\"\nargs = "+strings.Repeat("[", 20)+strings.Repeat("]", 20))); err != nil && strings.Contains(err.Error(), "nested") {
		t.Errorf("TOML 20 deep: %v", err)
	}

	path := filepath.Join(t.TempDir(), "big.json")
	if err := os.WriteFile(path, []byte(`{"mcpServers": {}, "x": "`+strings.Repeat("a", MaxFileSize)+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]func() error{
		"Load":      func() error { _, err := Load(path); return err },
		"AddServer": func() error { return AddServer(path, "a", &Server{Command: "x"}) },
	} {
		if err := f(); err == nil || !strings.Contains(err.Error(), "larger than 4 MiB") || !strings.Contains(err.Error(), path) {
			t.Errorf("%s of a file over the size limit: %v", name, err)
		}
	}
}

// BenchmarkCheckBounds: what the measure before parsing costs a config as
// large as the README's example and one at the size limit.
func BenchmarkCheckBounds(b *testing.B) {
	for name, data := range map[string][]byte{
		"product-example": []byte(productExample),
		"4MiB":            []byte(`{"mcpServers": {}, "x": "` + strings.Repeat(`a\"[{`, (MaxFileSize-40)/5) + `"}`),
	} {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if err := CheckBounds("/c.json", data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
