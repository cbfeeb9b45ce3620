package election

// FailingRunOption is a RunOption that does not apply: it returns err.
func FailingRunOption(err error) RunOption {
	return func(*runConfig) error { return err }
}
