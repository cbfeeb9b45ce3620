package compress_test

import (
	"testing"

	"github.com/zkrecipes/zkrecipes/internal/testinfra/peertest"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

var zkShared = zktest.NewShared()

func TestMain(m *testing.M) { testkit.Main(m, zkShared, peertest.Cleanup) }
