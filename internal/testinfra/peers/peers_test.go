package peers

import (
	"os"
	"path/filepath"
	"testing"
)

// TestDriversBuild: every driver builds from its embedded source, and its
// command line names what was built.
func TestDriversBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the drivers with javac")
	}
	defer Cleanup()
	for _, d := range []*Driver{CuratorDriver, CuratorDiscoveryDriver, KazooDriver, CuratorBench, CuratorDiscoveryBench, KazooBench} {
		argv, err := d.Command()
		if err != nil {
			t.Fatalf("%s: %v", d.source, err)
		}
		dir, _ := dir()
		built := filepath.Join(dir, d.source)
		if filepath.Ext(d.source) == ".java" {
			built = filepath.Join(dir, argv[len(argv)-1]+".class")
		} else if argv[len(argv)-1] != built {
			t.Errorf("%s: %q does not run %s", d.source, argv, built)
		}
		if _, err := os.Stat(built); err != nil {
			t.Errorf("%s: %v", d.source, err)
		}
	}
}
