// Package discovery is curator-x-discovery for Go: service instances
// registered under <base>/<service>/<instance-id>, each node holding the
// JSON of Curator's ServiceInstance, so that Go services and Java services
// using Curator's ServiceDiscovery on the same base path find each other.
//
// This file set holds the instance model and its JSON (Instance, URISpec),
// and the providers' strategies and down-instance policy.
package discovery
