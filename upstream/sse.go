package upstream

import (
	"bufio"
	"bytes"
	"io"
	"strconv"
	"sync"
	"time"
)

// scanEvents reads a server-sent event stream and calls fn with each event's
// id (the last one seen, "" if none) and data, its data lines joined with
// newlines, until fn says stop or the stream ends. Events without data
// (such as a priming event that only carries an id) are passed too.
//
// A line is read in pieces of the reader's buffer and a data line's pieces
// go straight into the event's data: a large answer is held once, not also
// in a line buffer grown to its size. An event's data is at most
// maxEventData bytes. When retry is not nil, each retry field (the
// reconnection time the upstream asks a client to wait before resuming the
// stream) is stored in it as it is read.
func scanEvents(r io.Reader, retry *time.Duration, fn func(lastID string, data []byte) (stop bool)) error {
	br := eventReaders.Get().(*bufio.Reader)
	br.Reset(&eolReader{r: r})
	defer func() { br.Reset(nil); eventReaders.Put(br) }()
	var data, id []byte
	lastID, seen := "", false
	for {
		piece, err := br.ReadSlice('\n')
		if len(piece) == 0 {
			if err == io.EOF {
				return nil
			}
			return err
		}
		if err == nil && len(trimEOL(piece)) == 0 { // a blank line ends the event
			if seen {
				stop := fn(lastID, data)
				data, seen = data[:0], false
				if stop {
					return nil
				}
			}
			continue
		}
		seen = true
		var into *[]byte // where the rest of the line goes, if anywhere
		if d, ok := bytes.CutPrefix(piece, []byte("data:")); ok {
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, bytes.TrimPrefix(d, []byte(" "))...)
			into = &data
		} else if v, ok := bytes.CutPrefix(piece, []byte("id:")); ok {
			id = append(id[:0], v...)
			into = &id
		} else if v, ok := bytes.CutPrefix(piece, []byte("retry:")); ok && retry != nil && err == nil {
			// Only ASCII digits count, in milliseconds; anything else is ignored.
			if ms, perr := strconv.ParseUint(string(bytes.TrimPrefix(trimEOL(v), []byte(" "))), 10, 31); perr == nil {
				*retry = time.Duration(ms) * time.Millisecond
			}
		}
		for err == bufio.ErrBufferFull {
			piece, err = br.ReadSlice('\n')
			if into != nil {
				*into = append(*into, piece...)
			}
			if len(data) > maxEventData {
				return bufio.ErrTooLong
			}
		}
		if into != nil {
			*into = trimEOL(*into)
		}
		if into == &id {
			lastID = string(bytes.TrimSpace(id))
		}
		if err != nil && err != io.EOF {
			return err
		}
	}
}

const maxEventData = 64 << 20

// eventReaders spares each call a fresh read buffer.
var eventReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 16<<10) }}

// trimEOL drops a line's "\n" (or "\r\n", should one get through).
func trimEOL(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte("\n"))
	return bytes.TrimSuffix(b, []byte("\r"))
}

// eolReader turns an event stream's line ends (CRLF, LF or a lone CR: the
// format allows all three) into LF as it reads. A CR becomes an LF at once,
// without waiting to see whether an LF follows (an answer's closing blank
// line must not wait for a byte an upstream may never send); an LF right
// after it is then dropped.
type eolReader struct {
	r      io.Reader
	skipLF bool // the last byte was a CR
}

func (e *eolReader) Read(p []byte) (int, error) {
	for {
		n, err := e.r.Read(p)
		b := p[:n]
		if e.skipLF && n > 0 {
			e.skipLF = false
			if b[0] == '\n' {
				b = b[1:]
			}
		}
		out := 0
		for len(b) > 0 {
			i := bytes.IndexByte(b, '\r')
			if i < 0 {
				out += copy(p[out:], b)
				break
			}
			out += copy(p[out:], b[:i])
			p[out] = '\n'
			out++
			b = b[i+1:]
			if len(b) == 0 {
				e.skipLF = true
			} else if b[0] == '\n' {
				b = b[1:]
			}
		}
		if out > 0 || err != nil || n == 0 {
			return out, err
		}
		// All that came was the LF of a CRLF split between reads.
	}
}
