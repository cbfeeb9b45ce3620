package wire

import (
	"testing"

	"go.uber.org/goleak"
)

// The tracker starts a writer per connection with requests to write:
// every test must leave none running.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
