package ui

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's run when its tests leave a goroutine running.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
