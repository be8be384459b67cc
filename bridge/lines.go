package bridge

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// readLine reads one line. A line longer than maxLine is read to its end but
// not kept: tooLong is set and line holds its first idPrefix bytes.
func readLine(r *bufio.Reader) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := r.ReadSlice('\n')
		switch {
		case tooLong:
		case len(line)+len(chunk) > maxLine:
			tooLong = true
			line = append([]byte(nil), line[:min(len(line), idPrefix)]...) // let the long buffer go
		default:
			line = append(line, chunk...)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err == io.EOF && (len(line) > 0 || tooLong) {
			err = nil // the last line had no newline; EOF comes on the next call
		}
		return line, tooLong, err
	}
}

// refuseLong answers a message too large to forward, so the client is not
// left waiting: with its id when that is among its first bytes, else with a
// parse error for a null id. An oversized answer to Warden is dropped.
func (b *Bridge) refuseLong(prefix []byte) {
	id, response := idOf(prefix)
	if response {
		return
	}
	code, text := jsonrpc.CodeInvalidRequest, fmt.Sprintf("message larger than %d MiB: warden stdio cannot forward it", maxLine>>20)
	if !hasID(id) {
		code, id = jsonrpc.CodeParseError, nullID
	}
	b.writeError(id, code, text)
}

// idOf finds the top-level id of a possibly truncated message by walking its
// members until the data ends; response is set if it has a result or error.
func idOf(prefix []byte) (id json.RawMessage, response bool) {
	d := json.NewDecoder(bytes.NewReader(prefix))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	for d.More() {
		t, err := d.Token()
		key, ok := t.(string)
		var v json.RawMessage
		if err != nil || !ok || d.Decode(&v) != nil {
			break
		}
		switch key {
		case "id":
			id = v
		case "result", "error":
			response = true
		}
	}
	return id, response
}
