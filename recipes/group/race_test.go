//go:build race

package group_test

// raceDetector is true when the tests run with -race.
const raceDetector = true
