package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

func runVersion(_ context.Context, args []string, out, _ io.Writer) error {
	fs := newFlags("version", "", out, "Prints the version of zkrecipes: the module version (\"(devel)\" when built\nfrom a source tree), the source revision it was built from, and the Go version.")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef(fs, "version takes no arguments")
	}
	fmt.Fprint(out, versionText())
	return nil
}

// versionText is "zkrecipes VERSION\n", then the revision and the Go
// version, from the build information the go command records.
func versionText() string {
	version, revision, when, modified := "(devel)", "", "", false
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v := bi.Main.Version; v != "" {
			version = v
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				revision = s.Value
			case "vcs.time":
				when = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	text := fmt.Sprintf("zkrecipes %s\n", version)
	if revision != "" {
		text += "revision " + revision
		if when != "" {
			text += " (" + when + ")"
		}
		if modified {
			text += ", with uncommitted changes"
		}
		text += "\n"
	}
	return text + fmt.Sprintf("built with %s for %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
