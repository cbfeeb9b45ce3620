package discovery

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/errtext"
)

// ServiceType is how an instance is registered, with Curator's names.
type ServiceType string

const (
	// Dynamic: an ephemeral node, kept while the registering process
	// lives and made again after its session expired. The default.
	Dynamic ServiceType = "DYNAMIC"
	// DynamicSequential: an ephemeral-sequential node whose name is the
	// instance ID followed by a sequence number.
	DynamicSequential ServiceType = "DYNAMIC_SEQUENTIAL"
	// Static: a persistent node, as Curator writes it; Curator gives it no
	// other meaning.
	Static ServiceType = "STATIC"
	// Permanent: a persistent node that outlives its registrar.
	Permanent ServiceType = "PERMANENT"
)

// Ephemeral reports whether instances of type t live in an ephemeral node.
func (t ServiceType) Ephemeral() bool { return t == Dynamic || t == DynamicSequential || t == "" }

func (t ServiceType) valid() bool {
	switch t {
	case "", Dynamic, DynamicSequential, Static, Permanent:
		return true
	}
	return false
}

// Instance is one registered instance of a service: curator-x-discovery's
// ServiceInstance, in the JSON a Curator ServiceDiscovery writes and reads.
//
// The zero values stand for Curator's nulls: a Port or SSLPort of 0 is
// written as null (no port), an empty Address as null, a nil Payload as
// null, a nil URISpec as null. Disabled is the negation of Curator's
// "enabled" (which is true when absent), so that the zero Instance is
// enabled.
type Instance struct {
	Name    string // the service's name, the parent node's
	ID      string // the instance's ID, its node's name
	Address string
	Port    int // 0: none
	SSLPort int // 0: none
	// Payload is the raw JSON of Curator's payload field, for the caller to
	// decode (written compacted). Curator writes it with Jackson's class tag: an object
	// payload carries an "@class" member naming the Java class. A Java
	// reader takes an object without one for a java.util.LinkedHashMap
	// (and writes the tag back); strings, numbers and booleans need none.
	// An array is not readable by Curator (Jackson wants its class tag in
	// a wrapper array): put it in an object when Java services read it.
	Payload      json.RawMessage
	Registration time.Time // registrationTimeUTC, in milliseconds
	ServiceType  ServiceType
	URISpec      *URISpec
	// Disabled is Curator's enabled=false: the instance is registered but
	// providers leave it out. Curator's default serializer does not write
	// the field (CURATOR-275), so an instance registered by such a Java
	// service is always enabled.
	Disabled bool
}

// ErrInvalidInstance is returned for what is not an instance (Validate),
// whether given to Register or Update or read from a node: no name or ID,
// a name or ID that is not a node name, an unknown service type, a port
// out of range, a payload that is not JSON; and for node data that is not
// an instance's JSON (null, not an object, no data) or that this client
// may not read.
var ErrInvalidInstance = errors.New("discovery: invalid instance")

// Validate checks that i is an instance: the one rule of what Register and
// Update accept and of what every read takes for an instance (Decode, and
// through it Instance, Instances, the ServiceCache and the Provider, which
// leave out the nodes that fail it). An instance has a name and an ID that
// are node names — Curator's ServiceInstance refuses a null name or ID,
// and its registration makes the node <base>/<name>/<id> — one of
// Curator's service types (or none: Dynamic), ports from 0 (none) to
// 65535, and a payload that is JSON, if any. An error wraps
// ErrInvalidInstance.
func (i *Instance) Validate() error {
	if err := checkName("name", i.Name); err != nil {
		return err
	}
	if err := checkName("id", i.ID); err != nil {
		return err
	}
	if !i.ServiceType.valid() {
		return errtext.Errorf("%w: service type %q", ErrInvalidInstance, i.ServiceType)
	}
	if i.Port < 0 || i.Port > 65535 || i.SSLPort < 0 || i.SSLPort > 65535 {
		return errtext.Errorf("%w: port %d, ssl port %d", ErrInvalidInstance, i.Port, i.SSLPort)
	}
	if len(i.Payload) > 0 && !json.Valid(i.Payload) {
		return errtext.Errorf("%w: the payload is not JSON", ErrInvalidInstance)
	}
	return nil
}

// wireInstance is the JSON of an instance, in the order of Jackson's
// output for Curator's ServiceInstance.
type wireInstance struct {
	Name                string          `json:"name"`
	ID                  string          `json:"id"`
	Address             *string         `json:"address"`
	Port                *int            `json:"port"`
	SSLPort             *int            `json:"sslPort"`
	Payload             json.RawMessage `json:"payload"`
	RegistrationTimeUTC int64           `json:"registrationTimeUTC"`
	ServiceType         ServiceType     `json:"serviceType"`
	URISpec             *URISpec        `json:"uriSpec"`
	Enabled             *bool           `json:"enabled,omitempty"`
}

// MarshalJSON writes i as Curator does, with "enabled" (Curator's
// non-compatible serializer writes it; the compatible one, its default,
// ignores it when reading).
func (i Instance) MarshalJSON() ([]byte, error) {
	w := wireInstance{
		Name:        i.Name,
		ID:          i.ID,
		Payload:     i.Payload,
		ServiceType: i.ServiceType,
		URISpec:     i.URISpec,
	}
	if w.ServiceType == "" {
		w.ServiceType = Dynamic
	}
	if i.Address != "" {
		w.Address = &i.Address
	}
	if i.Port != 0 {
		w.Port = &i.Port
	}
	if i.SSLPort != 0 {
		w.SSLPort = &i.SSLPort
	}
	if len(bytes.TrimSpace(w.Payload)) == 0 {
		w.Payload = json.RawMessage("null")
	}
	if !i.Registration.IsZero() {
		w.RegistrationTimeUTC = i.Registration.UnixMilli()
	}
	enabled := !i.Disabled
	w.Enabled = &enabled
	return json.Marshal(w)
}

// UnmarshalJSON reads an instance written by Curator (either serializer),
// Kazoo or this package. Unknown fields are ignored, as Curator's reader
// does. What is not an instance (Validate), JSON null among it, is an
// error wrapping ErrInvalidInstance, and leaves i unchanged.
func (i *Instance) UnmarshalJSON(b []byte) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		return errtext.Errorf("%w: null", ErrInvalidInstance)
	}
	var w wireInstance
	if err := json.Unmarshal(b, &w); err != nil {
		return errtext.Errorf("%w: %v", ErrInvalidInstance, err)
	}
	got := Instance{
		Name:        w.Name,
		ID:          w.ID,
		ServiceType: w.ServiceType,
		URISpec:     w.URISpec,
		Disabled:    w.Enabled != nil && !*w.Enabled,
	}
	if w.Address != nil {
		got.Address = *w.Address
	}
	if w.Port != nil {
		got.Port = *w.Port
	}
	if w.SSLPort != nil {
		got.SSLPort = *w.SSLPort
	}
	if p := bytes.TrimSpace(w.Payload); len(p) > 0 && !bytes.Equal(p, []byte("null")) {
		got.Payload = append(json.RawMessage(nil), p...)
	}
	if w.RegistrationTimeUTC != 0 {
		got.Registration = time.UnixMilli(w.RegistrationTimeUTC).UTC()
	}
	if err := got.Validate(); err != nil {
		return err
	}
	*i = got
	return nil
}

// Decode reads an instance from a node's data. Data that is not an
// instance's JSON, or whose instance fails Validate, is an error wrapping
// ErrInvalidInstance.
func Decode(data []byte) (Instance, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return Instance{}, errtext.Errorf("%w: no data", ErrInvalidInstance)
	}
	var i Instance
	if err := json.Unmarshal(data, &i); err != nil {
		if errors.Is(err, ErrInvalidInstance) {
			return Instance{}, err
		}
		return Instance{}, errtext.Errorf("%w: %v", ErrInvalidInstance, err)
	}
	return i, nil
}

// URI builds the instance's URI from its URISpec (Curator's
// buildUriSpec); "" when it has none.
func (i *Instance) URI(vars map[string]string) string {
	if i.URISpec == nil {
		return ""
	}
	return i.URISpec.Build(i, vars)
}

// String is a short description for logs: name/id at address:port.
func (i Instance) String() string {
	s := i.Name + "/" + i.ID
	if i.Address != "" || i.Port != 0 {
		s += fmt.Sprintf(" at %s:%d", i.Address, i.Port)
	}
	if i.Disabled {
		s += " (disabled)"
	}
	return s
}
