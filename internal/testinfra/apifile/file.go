package apifile

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ErrChanged is returned by Check when the exported API differs from the
// API file.
var ErrChanged = errors.New("apifile: the exported API differs from its API file")

// Header is the comment that opens every API file. Lines starting with #
// are not part of the API.
const Header = "# The exported API of module %s, one declaration a line.\n" +
	"# `make api` writes this file; `make lint` fails while it differs from the code.\n"

// Read returns the API lines of an API file, its comments left out.
func Read(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if line := sc.Text(); line != "" && !strings.HasPrefix(line, "#") {
			lines = append(lines, line)
		}
	}
	return lines, sc.Err()
}

// Write writes lines, sorted, as the API file of module at path, creating
// its directory if needed.
func Write(path, module string, lines []string) error {
	var b strings.Builder
	fmt.Fprintf(&b, Header, module)
	for _, line := range sortedCopy(lines) {
		b.WriteString(line + "\n")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// Diff returns the lines of got not in want (added) and of want not in got
// (removed), each sorted.
func Diff(want, got []string) (added, removed []string) {
	inWant := map[string]bool{}
	for _, l := range want {
		inWant[l] = true
	}
	inGot := map[string]bool{}
	for _, l := range got {
		inGot[l] = true
		if !inWant[l] {
			added = append(added, l)
		}
	}
	for _, l := range want {
		if !inGot[l] {
			removed = append(removed, l)
		}
	}
	return sortedCopy(added), sortedCopy(removed)
}

// Check compares the API lines got with the API file at path. When they
// differ it returns an error wrapping ErrChanged whose text lists the
// lines added (+) and removed (-) and says how to update the file; a
// missing file counts as empty.
func Check(path string, got []string) error {
	want, err := Read(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	added, removed := Diff(want, got)
	if len(added) == 0 && len(removed) == 0 {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d lines added (+), %d removed (-):\n", path, len(added), len(removed))
	// Merged in line order, so that a changed declaration's old and new
	// lines stand together.
	for len(added) > 0 || len(removed) > 0 {
		if len(added) == 0 || (len(removed) > 0 && removed[0] <= added[0]) {
			b.WriteString("- " + removed[0] + "\n")
			removed = removed[1:]
		} else {
			b.WriteString("+ " + added[0] + "\n")
			added = added[1:]
		}
	}
	b.WriteString("If the change is meant, run `make api` and review the API file's diff in the same commit.")
	return fmt.Errorf("%w\n%s", ErrChanged, b.String())
}
