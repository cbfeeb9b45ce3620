package zktest_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// shared is the package's one-node ensemble for tests that break only
// their own client's traffic; tests that stop servers start their own.
var shared = zktest.NewShared()

func TestMain(m *testing.M) { goleak.VerifyTestMain(shared.Wrap(m)) }
