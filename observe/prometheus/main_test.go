package zkprom

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// shared is the ZooKeeper ensemble of the package's tests.
var shared = zktest.NewShared()

// TestMain stops the ensemble, then fails if a goroutine leaked.
func TestMain(m *testing.M) { goleak.VerifyTestMain(shared.Wrap(m)) }
