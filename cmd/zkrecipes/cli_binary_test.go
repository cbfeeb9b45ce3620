package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// builtCLI is zkrecipes built once per test binary, for the tests that
// must signal, kill or give a terminal to the command line as a process
// of its own.
var builtCLI cliBinary

type cliBinary struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// get builds zkrecipes on first use and returns the binary's path.
func (b *cliBinary) get(t *testing.T) string {
	t.Helper()
	b.once.Do(func() {
		if b.dir, b.err = os.MkdirTemp("", "zkrecipes-cli-"); b.err != nil {
			return
		}
		b.path = filepath.Join(b.dir, "zkrecipes")
		cmd := exec.Command("go", "build", "-o", b.path, "./cmd/zkrecipes")
		cmd.Dir = filepath.Join("..", "..") // the module's root
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build ./cmd/zkrecipes: %v\n%s", err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// wrap runs the tests, then removes the binary.
func (b *cliBinary) wrap(m interface{ Run() int }) interface{ Run() int } {
	return testRun(func() int {
		code := m.Run()
		if b.dir != "" {
			os.RemoveAll(b.dir)
		}
		return code
	})
}

type testRun func() int

func (f testRun) Run() int { return f() }
