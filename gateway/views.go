package gateway

import (
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// View is a downstream surface that shows what the gateway exposes.
type View interface {
	// Changed says what server exposes may have changed (tools, prompts,
	// resources, visibility); the view re-reads it from the gateway.
	Changed(server string)
	Log(server string, p *mcp.LoggingMessageParams)
	// ResourceUpdated goes only to sessions that subscribed to the
	// resource through server.
	ResourceUpdated(server string, p *mcp.ResourceUpdatedNotificationParams)
}

// views are the surfaces the gateway tells of changes and notifications.
type views struct {
	mu   sync.RWMutex
	list []View
}

func (vs *views) add(v View) {
	vs.mu.Lock()
	vs.list = append(vs.list, v)
	vs.mu.Unlock()
}

// each calls f for every view, outside the lock: a view re-reads the
// gateway.
func (vs *views) each(f func(View)) {
	vs.mu.RLock()
	list := slices.Clone(vs.list)
	vs.mu.RUnlock()
	for _, v := range list {
		f(v)
	}
}
