package election

import "github.com/zkrecipes/zkrecipes/recipes/layout"

// FailingRunOption is a RunOption that does not apply: it returns err.
func FailingRunOption(err error) RunOption {
	return func(*runConfig) error { return err }
}

// PriorityOf is the priority a candidate's node name carries.
func PriorityOf(name string) int {
	c, ok := layout.Parse(name)
	if !ok {
		return 0
	}
	return priorityOf(c)
}
