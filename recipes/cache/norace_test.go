//go:build !race

package cache_test

// raceDetector is true when the tests run with -race.
const raceDetector = false
