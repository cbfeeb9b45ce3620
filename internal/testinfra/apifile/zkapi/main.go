// Command zkapi writes and checks the API files of the repository's
// modules: the exported API of every package of a module that is not a
// command and not internal, one declaration a line, in the form of the Go
// project's api/go1.*.txt files.
//
//	zkapi -write DIR=FILE ...   rewrite each module's API file and print
//	                            its exported identifiers counted by package
//	zkapi -check DIR=FILE ...   fail, listing the lines added and removed,
//	                            where a module's API differs from its file
//
// DIR is a module's root directory, FILE its API file; relative paths are
// taken from the directory zkapi runs in. `make api` and `make lint` run it.
package main

import (
	"errors"
	"flag"
	"fmt"
	"go/types"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/zkrecipes/zkrecipes/internal/testinfra/apifile"
)

func main() {
	write := flag.Bool("write", false, "rewrite the API files and print the counts")
	check := flag.Bool("check", false, "fail where the exported API differs from its API file")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: zkapi -write|-check DIR=FILE ...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *write == *check || flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	failed := false
	for _, arg := range flag.Args() {
		dir, file, ok := strings.Cut(arg, "=")
		if !ok {
			fmt.Fprintf(os.Stderr, "zkapi: %q is not DIR=FILE\n", arg)
			os.Exit(2)
		}
		if err := run(dir, file, *write); err != nil {
			fmt.Fprintln(os.Stderr, err)
			if !errors.Is(err, apifile.ErrChanged) {
				os.Exit(1)
			}
			failed = true
		}
	}
	if failed {
		os.Exit(1)
	}
}

func run(dir, file string, write bool) error {
	out, err := exec.Command("go", "-C", dir, "list", "-m").Output()
	if err != nil {
		return fmt.Errorf("zkapi: the module in %s: %v", dir, err)
	}
	module := strings.TrimSpace(string(out))
	pkgs, imported, err := apifile.Module(dir)
	if err != nil {
		return err
	}
	context := append(append([]*types.Package(nil), pkgs...), imported...)
	var lines []string
	var counts []apifile.Count
	for _, pkg := range pkgs {
		lines = append(lines, apifile.Lines(pkg, context...)...)
		counts = append(counts, apifile.CountOf(pkg))
	}
	if !write {
		return apifile.Check(file, lines)
	}
	if err := apifile.Write(file, module, lines); err != nil {
		return err
	}
	fmt.Printf("%s: %d lines, module %s\n", filepath.Clean(file), len(lines), module)
	return apifile.WriteCounts(os.Stdout, module, counts)
}
