// Package misuse holds the table tests of bad input and misuse over every
// public entry point of the library: each case must end in a sentinel
// error the caller can match with errors.Is, with no panic, no znode left
// behind and no goroutine leaked. It has no code of its own.
//
// The suite lives here, beside the test infrastructure it runs on, rather
// than in one recipe's tests: it crosses every package of the library
// (one table over connection and all the recipes, so that a new entry
// point is checked against the same rules as the others), it belongs to
// none of them, and internal/ outside testinfra holds the library's own
// code only.
package misuse
