package apifile_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/zkrecipes/zkrecipes/internal/testinfra/apifile"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const fixturePath = "github.com/zkrecipes/zkrecipes/internal/testinfra/apifile/testdata/fixture"

// fixtureAPI is the API of testdata/fixture, with "pkg F, " standing for
// "pkg <its import path>, ".
var fixtureAPI = []string{
	// Untyped constants of each kind, and a typed family made with iota
	// (its unexported member left out).
	"pkg F, const Enabled = true",
	"pkg F, const Enabled ideal-bool",
	"pkg F, const MaxSize = 1048576",
	"pkg F, const MaxSize ideal-int",
	"pkg F, const ModeRead = 0",
	"pkg F, const ModeRead Mode",
	"pkg F, const ModeWrite = 1",
	"pkg F, const ModeWrite Mode",
	"pkg F, const Name = \"fixture\"",
	"pkg F, const Name ideal-string",
	"pkg F, const Ratio = 1/2",
	"pkg F, const Ratio ideal-float",
	"pkg F, const Separator = 47",
	"pkg F, const Separator ideal-rune",
	// Generic functions: type parameters by index, with their constraints.
	"pkg F, func Configure(*Config) error",
	"pkg F, func Map[$0 interface{}, $1 interface{}]([]$0, func($0) $1) []$1",
	// Variadic parameters, types of other packages by package name.
	"pkg F, func Open(context.Context, string, ...Option) (*Client, error)",
	"pkg F, func Sum[$0 Number](...$0) $0",
	"pkg F, func Unexported() unexported",
	// Method sets: pointer and value receivers, methods promoted from an
	// embedded pointer, interface and unexported type, methods on a
	// generic type.
	"pkg F, method (*Base) Close() error",
	"pkg F, method (*Client) Watch(context.Context) (<-chan struct{}, func())",
	"pkg F, method (*Set[$0, $1]) Add($0, $1) bool",
	"pkg F, method (Base) Kind() string",
	"pkg F, method (Client) Close() error",
	"pkg F, method (Client) Hello()",
	"pkg F, method (Client) Kind() string",
	"pkg F, method (Client) Mode() Mode",
	"pkg F, method (Client) Read([]byte) (int, error)",
	"pkg F, method (Set[$0, $1]) Len() int",
	// Aliases, as the type they stand for.
	"pkg F, type Alias = Base",
	// An alias exposing an internal type: the type under the alias's
	// name, its fields and methods included.
	"pkg F, method (*Config) Validate() error",
	"pkg F, type Config struct",
	"pkg F, type Config struct, Size int",
	// Struct fields, embedded ones by type; unexported fields and embedded
	// unexported types left out.
	"pkg F, type Base struct",
	"pkg F, type Base struct, ID string",
	"pkg F, type Client struct",
	"pkg F, type Client struct, Tags map[string][]byte",
	"pkg F, type Client struct, Timeout int64",
	"pkg F, type Client struct, embedded *Base",
	"pkg F, type Client struct, embedded io.Reader",
	// Interfaces: the whole method set (an embedded interface's too), an
	// alias in a signature written as its target.
	"pkg F, type Getter interface { Close, Get }",
	"pkg F, type Getter interface, Close() error",
	"pkg F, type Getter interface, Get(string, Base) (int, error)",
	"pkg F, type Handler func(context.Context, chan<- int) error",
	"pkg F, type Mode int",
	// A constraint: its union as an element.
	"pkg F, type Number interface {}",
	"pkg F, type Number interface, ~int | ~int64 | float64",
	"pkg F, type Option func(*options) error",
	"pkg F, type Other = io.Writer",
	// An interface with an unexported method cannot be implemented
	// outside: that is part of its API.
	"pkg F, type Sealed interface { Public, unexported methods }",
	"pkg F, type Sealed interface, Public() Set[string, int]",
	"pkg F, type Sealed interface, unexported methods",
	// A generic type and its fields.
	"pkg F, type Set[$0 comparable, $1 interface{}] struct",
	"pkg F, type Set[$0 comparable, $1 interface{}] struct, Items map[$0]$1",
	"pkg F, var ErrClosed error",
}

func loadFixture(t *testing.T) []string {
	t.Helper()
	pkgs, _, err := apifile.Load(".", "./testdata/fixture")
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) != 1 || pkgs[0].Path() != fixturePath {
		t.Fatalf("loaded %v, want the one package %s", pkgs, fixturePath)
	}
	var lines []string
	for _, l := range apifile.Lines(pkgs[0]) {
		lines = append(lines, strings.Replace(l, "pkg "+fixturePath+", ", "pkg F, ", 1))
	}
	return lines
}

func TestLinesWriteEveryKindOfExportedDeclaration(t *testing.T) {
	got := loadFixture(t)
	added, removed := apifile.Diff(fixtureAPI, got)
	for _, l := range removed {
		t.Errorf("missing: %s", l)
	}
	for _, l := range added {
		t.Errorf("unexpected: %s", l)
	}
	if !slices.IsSorted(got) {
		t.Errorf("lines not sorted:\n%s", strings.Join(got, "\n"))
	}
}

func TestLinesLeaveOutUnexportedDeclarations(t *testing.T) {
	for _, l := range loadFixture(t) {
		for _, name := range []string{"modeHidden", "hidden()", "var hidden", "private", "Hidden int", "type options", "type inner", "type unexported", "secret", "impl."} {
			if strings.Contains(l, name) {
				t.Errorf("line %q shows unexported %s", l, name)
			}
		}
	}
}

func TestCountOfCountsDeclaredIdentifiersByKind(t *testing.T) {
	pkgs, _, err := apifile.Load(".", "./testdata/fixture")
	if err != nil {
		t.Fatal(err)
	}
	got := apifile.CountOf(pkgs[0])
	want := apifile.Count{
		Path:   fixturePath,
		Consts: 7, // ModeRead, ModeWrite, MaxSize, Name, Ratio, Enabled, Separator
		Vars:   1, // ErrClosed
		Funcs:  5, // Open, Sum, Map, Unexported, Configure
		Types:  12,
		// Base.Close, Base.Kind, Client.Mode, Client.Watch, Set.Add,
		// Set.Len, Getter.Get, Sealed.Public, Config.Validate: promoted
		// ones are counted where they are declared.
		Methods: 9,
		Fields:  7, // Base.ID, Client.Base, Client.Reader, Client.Timeout, Client.Tags, Set.Items, Config.Size
		Lines:   len(fixtureAPI),
	}
	if got != want {
		t.Errorf("CountOf = %+v, want %+v", got, want)
	}
	if got.Total() != 41 {
		t.Errorf("Total = %d, want 41", got.Total())
	}
}

func TestPublicLeavesOutInternalPackagesAndCommands(t *testing.T) {
	for _, tc := range []struct {
		path, name string
		want       bool
	}{
		{"example.com/m", "m", true},
		{"example.com/m/recipes/mutex", "mutex", true},
		{"example.com/m/internal", "internal", false},
		{"example.com/m/internal/lockcore", "lockcore", false},
		{"example.com/m/cmd/tool/internal/bench", "bench", false},
		{"example.com/m/internals", "internals", true},
		{"example.com/m/cmd/tool", "main", false},
	} {
		if got := apifile.Public(tc.path, tc.name); got != tc.want {
			t.Errorf("Public(%q, %q) = %v, want %v", tc.path, tc.name, got, tc.want)
		}
	}
}

// TestModuleLeavesOutInternalCommandsTestdataAndNestedModules loads a
// module laid out as this repository is.
func TestModuleLeavesOutInternalCommandsTestdataAndNestedModules(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":                  "module example.com/m\n\ngo 1.22\n",
		"m.go":                    "package m\n\nfunc Root() {}\n",
		"pub/pub.go":              "package pub\n\nimport \"example.com/m/internal/core\"\n\ntype T = core.T\n\nfunc Pub() core.T { return 0 }\n",
		"pub/pub_test.go":         "package pub\n\nfunc TestOnly() {}\n",
		"internal/core/core.go":   "package core\n\ntype T int\n\nfunc Core() {}\n",
		"cmd/tool/main.go":        "package main\n\nfunc Tool() {}\n\nfunc main() {}\n",
		"pub/testdata/x/x.go":     "package x\n\nfunc Testdata() {}\n",
		"nested/go.mod":           "module example.com/m/nested\n\ngo 1.22\n",
		"nested/nested.go":        "package nested\n\nfunc Nested() {}\n",
		"pub/internal/in/in.go":   "package in\n\nfunc In() {}\n",
		"pub/sub/sub.go":          "package sub\n\nimport \"example.com/m/pub\"\n\nconst Sub = 1\n\nfunc Use(pub.T) {}\n",
		"pub/sub/sub_ext_test.go": "package sub_test\n\nfunc Ext() {}\n",
	}
	for name, text := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pkgs, imported, err := apifile.Module(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, pkg := range pkgs {
		got = append(got, apifile.Lines(pkg, append(pkgs, imported...)...)...)
	}
	want := []string{
		"pkg example.com/m, func Root()",
		// An internal type is written by the public alias that exposes it,
		// in its package and in others.
		"pkg example.com/m/pub, func Pub() T",
		"pkg example.com/m/pub, type T int",
		"pkg example.com/m/pub/sub, const Sub = 1",
		"pkg example.com/m/pub/sub, const Sub ideal-int",
		"pkg example.com/m/pub/sub, func Use(pub.T)",
	}
	if !slices.Equal(got, want) {
		t.Errorf("Module's lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestLoadReportsABrokenPackage(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/b\n\ngo 1.22\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "b.go"), []byte("package b\n\nfunc F() int { return \"\" }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err := apifile.Module(dir)
	if !errors.Is(err, apifile.ErrLoad) {
		t.Fatalf("Module of a package that does not compile: %v, want ErrLoad", err)
	}
}
