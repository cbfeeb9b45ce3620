//go:build !race

package connection_test

// raceDetector is true when the tests run with -race.
const raceDetector = false
