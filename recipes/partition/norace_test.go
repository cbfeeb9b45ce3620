//go:build !race

package partition_test

// raceDetector is true when the tests run with -race.
const raceDetector = false
