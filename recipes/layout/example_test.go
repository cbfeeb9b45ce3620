package layout_test

import (
	"fmt"

	"github.com/zkrecipes/zkrecipes/recipes/layout"
)

// A listing of a lock directory, as Client.Children returns it, read as a
// mutex's line: Curator's and Kazoo's nodes take their places by sequence
// number, other children are left out, and the first holds.
func ExampleSort() {
	children := []string{
		"_c_8e1f7a52-3b0c-4d6e-9f21-6a7b8c9d0e1f-lock-0000000012",
		"0f1e2d3c4b5a69788796a5b4c3d2e1f0__lock__0000000010",
		"leases",
		"_c_0b9d8a54-52b6-4d1c-9e73-1f3d2a6c5b7e-lock-0000000011",
	}
	for i, c := range layout.Sort(children, layout.MutexKinds) {
		role := "waits"
		if i == 0 {
			role = "holds"
		}
		fmt.Println(c.Seq, c.Kind, role)
	}
	// Output:
	// 0000000010 kazoo-lock holds
	// 0000000011 mutex waits
	// 0000000012 mutex waits
}
