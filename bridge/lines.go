package bridge

import (
	"bufio"
	"fmt"
	"io"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/wardenmcp/warden/protocol"
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
	id, response := protocol.IDOf(prefix)
	if response {
		return
	}
	code, text := int64(jsonrpc.CodeInvalidRequest), fmt.Sprintf("message larger than %d MiB: warden stdio cannot forward it", maxLine>>20)
	if !protocol.IsRequestID(id) {
		code, id = jsonrpc.CodeParseError, protocol.NullID
	}
	b.writeError(id, code, text)
}
