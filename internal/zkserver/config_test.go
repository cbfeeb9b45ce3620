package zkserver

import (
	"slices"
	"testing"
	"time"
)

func TestContainerCheckInterval(t *testing.T) {
	c, err := newConfig(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(c.serverFlags(), "-Dznode.container.checkIntervalMs=1000") {
		t.Fatalf("default flags %v", c.serverFlags())
	}
	if c, err = newConfig([]Option{WithContainerCheckInterval(time.Minute), WithJVMFlags("-Xmx64m")}); err != nil {
		t.Fatal(err)
	}
	if got := c.serverFlags(); !slices.Equal(got, []string{"-Xmx64m", "-Dznode.container.checkIntervalMs=60000"}) {
		t.Fatalf("flags %v", got)
	}
	if _, err := newConfig([]Option{WithContainerCheckInterval(0)}); err == nil {
		t.Fatal("an interval of 0 was accepted")
	}
}
