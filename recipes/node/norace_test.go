//go:build !race

package node_test

// raceDetector is true when the tests run with -race.
const raceDetector = false
