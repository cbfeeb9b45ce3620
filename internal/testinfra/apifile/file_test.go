package apifile_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/zkrecipes/zkrecipes/internal/testinfra/apifile"
)

func TestWriteThenReadGivesTheSortedLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "api", "m.txt")
	lines := []string{"pkg m, var B int", "pkg m, func A()"}
	if err := apifile.Write(path, "example.com/m", lines); err != nil {
		t.Fatal(err)
	}
	got, err := apifile.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"pkg m, func A()", "pkg m, var B int"}; !slices.Equal(got, want) {
		t.Errorf("Read = %q, want %q", got, want)
	}
	data, _ := os.ReadFile(path)
	if !strings.HasPrefix(string(data), "# The exported API of module example.com/m,") {
		t.Errorf("file does not open with its header:\n%s", data)
	}
}

func TestCheckPassesWhenTheAPIMatchesItsFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.txt")
	lines := []string{"pkg m, func A()", "pkg m, func B()"}
	if err := apifile.Write(path, "example.com/m", lines); err != nil {
		t.Fatal(err)
	}
	if err := apifile.Check(path, []string{"pkg m, func B()", "pkg m, func A()"}); err != nil {
		t.Errorf("Check of the same lines in another order: %v", err)
	}
}

func TestCheckListsLinesAddedAndRemoved(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.txt")
	old := []string{"pkg m, func A()", "pkg m, func F(int)", "pkg m, var Z int"}
	if err := apifile.Write(path, "example.com/m", old); err != nil {
		t.Fatal(err)
	}
	err := apifile.Check(path, []string{"pkg m, func A()", "pkg m, func F(string)", "pkg m, func G()", "pkg m, var Z int"})
	if !errors.Is(err, apifile.ErrChanged) {
		t.Fatalf("Check after a change: %v, want ErrChanged", err)
	}
	msg := err.Error()
	for _, want := range []string{
		"2 lines added (+), 1 removed (-)",
		"- pkg m, func F(int)\n+ pkg m, func F(string)\n+ pkg m, func G()\n",
		"run `make api`",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error does not say %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "func A()") || strings.Contains(msg, "var Z") {
		t.Errorf("error lists unchanged lines:\n%s", msg)
	}
}

func TestCheckCountsAMissingFileAsEmpty(t *testing.T) {
	err := apifile.Check(filepath.Join(t.TempDir(), "none.txt"), []string{"pkg m, func A()"})
	if !errors.Is(err, apifile.ErrChanged) || !strings.Contains(err.Error(), "+ pkg m, func A()") {
		t.Errorf("Check without a file: %v, want ErrChanged adding the line", err)
	}
}

func TestWriteCountsTabulatesEachPackageAndTheSum(t *testing.T) {
	var b strings.Builder
	err := apifile.WriteCounts(&b, "example.com/m", []apifile.Count{
		{Path: "example.com/m", Funcs: 1, Lines: 1},
		{Path: "example.com/m/pub", Consts: 2, Types: 1, Methods: 3, Fields: 1, Lines: 9},
	})
	if err != nil {
		t.Fatal(err)
	}
	rows := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(rows) != 4 {
		t.Fatalf("table has %d rows, want header, 2 packages, sum:\n%s", len(rows), b.String())
	}
	for i, want := range [][]string{
		{"package", "const", "var", "func", "type", "method", "field", "total", "API", "lines"},
		{"m", "0", "0", "1", "0", "0", "0", "1", "1"},
		{"pub", "2", "0", "0", "1", "3", "1", "7", "9"},
		{"all", "2", "0", "1", "1", "3", "1", "8", "10"},
	} {
		if got := strings.Fields(rows[i]); !slices.Equal(got, want) {
			t.Errorf("row %d = %q, want %q", i, got, want)
		}
	}
}
