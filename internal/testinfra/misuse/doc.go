// Package misuse holds the table tests of bad input and misuse over every
// public entry point of the library: each case must end in a sentinel
// error the caller can match with errors.Is, with no panic, no znode left
// behind and no goroutine leaked. It has no code of its own.
package misuse
