package main

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestCommandReadsRecipesThroughPublicAPI: the command line reads the
// recipes' state through the public API only, as any user's tool would;
// of the library's internal packages it imports only those that hold no
// recipe state (the local servers of demo and dev, the metrics' text
// format).
func TestCommandReadsRecipesThroughPublicAPI(t *testing.T) {
	allowed := map[string]bool{
		"github.com/zkrecipes/zkrecipes/internal/zkserver": true,
		"github.com/zkrecipes/zkrecipes/internal/promtext": true,
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		n++
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if strings.Contains(p, "/internal/") && !allowed[p] {
				t.Errorf("%s imports %s", name, p)
			}
		}
	}
	if n == 0 {
		t.Fatal("no source files found")
	}
}
