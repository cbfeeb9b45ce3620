// Package discovery is curator-x-discovery for Go: service instances
// registered under <base>/<service>/<instance-id>, each node holding the
// JSON of Curator's ServiceInstance, so that Go services and Java services
// using Curator's ServiceDiscovery on the same base path find each other.
//
//	d, err := discovery.New(client, "/services")
//	reg, err := d.Register(ctx, discovery.Instance{Name: "web", Address: "10.0.0.7", Port: 8080})
//	defer reg.Close(ctx)
//
//	p, err := d.Provider(ctx, "web", discovery.WithStrategy(discovery.RoundRobin()))
//	defer p.Close()
//	i, err := p.Instance() // one of the enabled instances; p.NoteError(i) if it fails
//
// # Registering
//
// Register keeps an instance registered until Close, on a node that stays
// (recipes/node): a Dynamic instance is an ephemeral node, made again in
// the new session after an expiry and made again when someone deletes it;
// Update writes new fields, which every re-create uses. Static and
// Permanent instances are persistent nodes, as Curator makes them;
// DynamicSequential instances are ephemeral-sequential nodes with a
// protected name. A registration keeps, and Close deletes, only the node
// it made: a node already at the instance's path (a previous run's
// Permanent instance, say) is left as it is, unless Register is given
// WithAdoptExisting.
//
// # Finding
//
// Names and Instances read the services and their instances once
// (Curator's queryForNames and queryForInstances). A ServiceCache follows
// one service's instances (a cache of <base>/<service> and its children):
// Instances returns the view, Listen its changes, instance by instance. A
// Provider picks one instance at a time from such a cache with a Strategy
// (RoundRobin, Random, Sticky), leaving out the disabled ones and those
// reported down (DownPolicy), as Curator's ServiceProvider does.
//
// # The JSON
//
// Instance reads and writes Curator's field names and nulls; the payload
// stays raw JSON for the caller to decode. Curator's Jackson writes an
// object payload with an "@class" member naming its Java class, and reads
// one without it as a map; it cannot read a top-level array. URISpec is
// Curator's template syntax, "{scheme}://{address}:{port}". Validate is
// the one rule of what an instance is, for what is written and what is
// read: data that is not an instance, and a node this client may not
// read, are left out of queries, caches and providers and reported, never
// fatal.
//
// See docs/discovery.md for the layout, the differences from Curator,
// the failure cases and the figures.
package discovery
