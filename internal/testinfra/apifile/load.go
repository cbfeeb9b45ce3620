package apifile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"strings"
)

// ErrLoad is returned when the packages of a module cannot be listed,
// built or read.
var ErrLoad = errors.New("apifile: cannot load packages")

// listed is the part of `go list -json` output the loader reads.
type listed struct {
	ImportPath string
	Name       string
	Export     string
	DepOnly    bool
	Standard   bool
	Imports    []string
	Error      *struct{ Err string }
}

// Public reports whether a package listed in a module belongs to its
// exported API: not a command and not under an internal directory.
func Public(importPath, name string) bool {
	if name == "main" {
		return false
	}
	for _, elem := range strings.Split(importPath, "/") {
		if elem == "internal" {
			return false
		}
	}
	return true
}

// Module returns the packages of the module at dir that are Public, in
// import path order, and the packages they import (for Lines' context).
// Its nested modules and testdata directories are left out, as the
// pattern ./... leaves them out.
func Module(dir string) (public, imported []*types.Package, err error) {
	pkgs, imported, err := Load(dir, "./...")
	if err != nil {
		return nil, nil, err
	}
	for _, pkg := range pkgs {
		if Public(pkg.Path(), pkg.Name()) {
			public = append(public, pkg)
		}
	}
	return public, imported, nil
}

// Load builds the packages that patterns name, run in dir, and returns
// them read from the compiler's export data, in import path order, and
// the packages outside the standard library that they import directly.
// The export data holds only a package's non-test files.
func Load(dir string, patterns ...string) (pkgs, imported []*types.Package, err error) {
	args := append([]string{"list", "-e", "-export", "-deps",
		"-json=ImportPath,Name,Export,DepOnly,Standard,Imports,Error"}, patterns...)
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, nil, fmt.Errorf("%w: go list in %s: %v: %s", ErrLoad, dir, err, strings.TrimSpace(stderr.String()))
	}
	exports := map[string]string{}
	standard := map[string]bool{}
	var roots []string
	var imports []string
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			return nil, nil, fmt.Errorf("%w: go list output: %v", ErrLoad, err)
		}
		if p.Error != nil {
			return nil, nil, fmt.Errorf("%w: %s: %s", ErrLoad, p.ImportPath, p.Error.Err)
		}
		exports[p.ImportPath] = p.Export
		standard[p.ImportPath] = p.Standard
		if !p.DepOnly {
			roots = append(roots, p.ImportPath)
			imports = append(imports, p.Imports...)
		}
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		file, ok := exports[path]
		if !ok || file == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(file)
	})
	for _, path := range sortedCopy(roots) {
		pkg, err := imp.Import(path)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %s: %v", ErrLoad, path, err)
		}
		pkgs = append(pkgs, pkg)
	}
	seen := map[string]bool{}
	for _, path := range sortedCopy(imports) {
		if seen[path] || standard[path] || path == "C" || path == "unsafe" {
			continue
		}
		seen[path] = true
		pkg, err := imp.Import(path)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %s: %v", ErrLoad, path, err)
		}
		imported = append(imported, pkg)
	}
	return pkgs, imported, nil
}
