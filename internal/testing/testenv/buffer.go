package testenv

import (
	"strings"
	"sync"
)

// Buffer is text written by goroutines (a log, a process's output) that a
// test reads meanwhile: a strings.Builder safe for concurrent use.
type Buffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
