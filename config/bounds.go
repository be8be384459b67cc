package config

import (
	"fmt"
	"io"
	"os"
	"strconv"
)

// The parsers of config files (hujson; for Codex's TOML see decodeTOML)
// recurse once per level of nesting: a file nested a million deep overflows
// the goroutine stack, a fatal error no recover catches. So a file is
// measured before any parser sees it, with limits far above any real
// config (Warden's own nests six deep at most: sandbox.paths.read).
const (
	MaxFileSize = 4 << 20 // bytes
	MaxDepth    = 64      // nested objects and arrays
)

// ReadFile reads a config file of at most MaxFileSize bytes; a larger one
// is an *Error saying so, read no further than the limit.
func ReadFile(path string) ([]byte, error) {
	data, _, err := readFile(path)
	return data, err
}

// readFile is ReadFile, also answering the path the file was opened at,
// every link resolved, as the kernel has it for the open file ("" if
// /proc cannot tell): what was read, which a second lookup could not
// promise, a link changed in between.
func readFile(path string) (data []byte, opened string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	opened, _ = os.Readlink("/proc/self/fd/" + strconv.Itoa(int(f.Fd())))
	if data, err = io.ReadAll(io.LimitReader(f, MaxFileSize+1)); err != nil {
		return nil, "", err
	}
	if err := checkSize(path, data); err != nil {
		return nil, "", err
	}
	return data, opened, nil
}

func checkSize(path string, data []byte) error {
	if len(data) <= MaxFileSize {
		return nil
	}
	e := &Error{File: path, Problem: fmt.Sprintf("the file is larger than %d MiB, Warden's limit for a config file", MaxFileSize>>20),
		Fix: "a config holds servers, not data: remove what does not belong there"}
	e.Line, e.Column = lineCol(data, MaxFileSize)
	return e
}

// CheckBounds refuses JSONC data larger than MaxFileSize or with objects and
// arrays nested deeper than MaxDepth. It counts brackets outside strings
// and comments in one pass, without recursion; what is malformed otherwise
// is left to the parser to name.
func CheckBounds(path string, data []byte) error {
	if err := checkSize(path, data); err != nil {
		return err
	}
	depth := 0
	for i := 0; i < len(data); i++ {
		switch c := data[i]; c {
		case '"':
			for i++; i < len(data) && data[i] != '"'; i++ {
				if data[i] == '\\' {
					i++
				}
			}
		case '/':
			switch {
			case i+1 < len(data) && data[i+1] == '/':
				for i += 2; i < len(data) && data[i] != '\n'; i++ {
				}
			case i+1 < len(data) && data[i+1] == '*':
				for i += 2; i+1 < len(data) && (data[i] != '*' || data[i+1] != '/'); i++ {
				}
				i++
			}
		case '{', '[':
			if depth++; depth > MaxDepth {
				return depthError(path, data, i)
			}
		case '}', ']':
			depth--
		}
	}
	return nil
}

func depthError(path string, data []byte, off int) *Error {
	e := &Error{File: path, Problem: fmt.Sprintf("objects and arrays are nested more than %d deep, Warden's limit for a config file", MaxDepth),
		Fix: "a config nests a few levels: remove the extra nesting"}
	e.Line, e.Column = lineCol(data, off)
	return e
}
