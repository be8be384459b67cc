package writes

import (
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Class is a tool's write class.
type Class string

// The write classes. Only ClassRead calls bypass the latch.
const (
	ClassRead        Class = "read"
	ClassWrite       Class = "write"
	ClassDestructive Class = "destructive"
)

// Valid reports whether c is one of the three classes.
func (c Class) Valid() bool {
	return c == ClassRead || c == ClassWrite || c == ClassDestructive
}

// ParseClass validates a config value (`tools.<name>.class`).
func ParseClass(s string) (Class, error) {
	c := Class(s)
	if !c.Valid() {
		return "", fmt.Errorf("class %q: want read, write or destructive", s)
	}
	return c, nil
}

// Classify returns a tool's class: the config override when set; else read
// when a.ReadOnlyHint is true; else write when a.DestructiveHint is set and
// false; else destructive (the MCP defaults: readOnlyHint false,
// destructiveHint true, so an unannotated tool is destructive).
//
// An override that is not a valid class (config validation should have
// rejected it, see ParseClass) fails closed as destructive.
func Classify(override string, a *mcp.ToolAnnotations) Class {
	if override != "" {
		if c := Class(override); c.Valid() {
			return c
		}
		return ClassDestructive
	}
	if a == nil {
		return ClassDestructive
	}
	if a.ReadOnlyHint {
		return ClassRead
	}
	if a.DestructiveHint != nil && !*a.DestructiveHint {
		return ClassWrite
	}
	return ClassDestructive
}
