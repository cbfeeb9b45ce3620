// Package nodeopt gives the library's own recipes the options of
// recipes/node that are not part of its public API. recipes/node sets its
// functions as it starts (init), so a package that imports recipes/node
// finds them set.
package nodeopt

// Recipe returns a node.Option, as any, that names the Node's presence
// periods to the client's observer (connection.ViewChange's Recipe) by
// name instead of "node": a recipe built on a kept node ("discovery").
var Recipe func(name string) any
