package upstream

import (
	"bufio"
	"bytes"
	"io"
	"sync"
)

// scanEvents reads a server-sent event stream and calls fn with each event's
// id (the last one seen, "" if none) and data, its data lines joined with
// newlines, until fn says stop or the stream ends. Events without data
// (such as a priming event that only carries an id) are passed too.
// scanBuffers spares each call a fresh line buffer (lines longer than one
// get a buffer of their own, which is not kept).
var scanBuffers = sync.Pool{New: func() any { b := make([]byte, 16<<10); return &b }}

func scanEvents(r io.Reader, fn func(lastID string, data []byte) (stop bool)) error {
	buf := scanBuffers.Get().(*[]byte)
	defer scanBuffers.Put(buf)
	sc := bufio.NewScanner(r)
	sc.Buffer(*buf, 64<<20)
	sc.Split(sseLines())
	var data []byte
	lastID, seen := "", false
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) > 0 {
			seen = true
			if d, ok := bytes.CutPrefix(line, []byte("data:")); ok {
				if len(data) > 0 {
					data = append(data, '\n')
				}
				data = append(data, bytes.TrimPrefix(d, []byte(" "))...)
			} else if v, ok := bytes.CutPrefix(line, []byte("id:")); ok {
				lastID = string(bytes.TrimSpace(v))
			}
			continue
		}
		if !seen {
			continue
		}
		stop := fn(lastID, data)
		data, seen = data[:0], false
		if stop {
			return nil
		}
	}
	return sc.Err()
}

// sseLines splits an event stream into lines, which end in CRLF, LF or a
// lone CR (the event-stream format allows all three; bufio.ScanLines knows
// no lone CR). A line is passed on at its CR without waiting to see whether
// an LF follows: an answer's closing blank line must not wait for a byte an
// upstream may never send.
func sseLines() bufio.SplitFunc {
	skipLF := false // the last line ended in CR: an LF first completes that CRLF
	return func(data []byte, atEOF bool) (int, []byte, error) {
		start := 0
		if skipLF && len(data) > 0 && data[0] == '\n' {
			start = 1
		}
		rest := data[start:]
		if i := bytes.IndexAny(rest, "\r\n"); i >= 0 {
			skipLF = rest[i] == '\r'
			return start + i + 1, rest[:i], nil
		}
		switch {
		case !atEOF:
			return 0, nil, nil // more to read
		case len(rest) == 0:
			return len(data), nil, nil // nothing left: the end
		}
		return len(data), rest, nil
	}
}
