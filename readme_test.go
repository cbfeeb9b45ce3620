package zkrecipes

import (
	"os"
	"strings"
	"testing"
)

// TestReadmeListsEveryRecipe: the README's list of what works names every
// package under recipes/, so a new recipe cannot ship unlisted.
func TestReadmeListsEveryRecipe(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	dirs, err := os.ReadDir("recipes")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		n++
		if entry := "- **`recipes/" + d.Name() + "`**"; !strings.Contains(string(readme), entry) {
			t.Errorf("README.md lacks the line %q", entry)
		}
	}
	if n == 0 {
		t.Fatal("no recipe packages found under recipes/")
	}
}
