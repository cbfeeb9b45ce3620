package discovery

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"
)

// Written by Curator 5.4's JsonInstanceSerializer (Debian's
// libcurator-discovery-java): the compatible serializer (its default,
// without "enabled"), the full one, a String payload, and the nulls.
const (
	curatorCompatible = `{"name":"web","id":"a1","address":"10.0.0.1","port":8080,"sslPort":8443,"payload":{"@class":"java.util.HashMap","zone":"eu"},"registrationTimeUTC":1700000000123,"serviceType":"DYNAMIC","uriSpec":{"parts":[{"value":"scheme","variable":true},{"value":"://","variable":false},{"value":"address","variable":true},{"value":":","variable":false},{"value":"port","variable":true},{"value":"/x/","variable":false},{"value":"[","variable":true},{"value":"y","variable":false},{"value":"]","variable":true}]}}`
	curatorFull       = `{"name":"web","id":"a1","address":"10.0.0.1","port":8080,"sslPort":8443,"payload":{"@class":"java.util.HashMap","zone":"eu"},"registrationTimeUTC":1700000000123,"serviceType":"DYNAMIC","uriSpec":{"parts":[{"value":"scheme","variable":true},{"value":"://","variable":false},{"value":"address","variable":true},{"value":":","variable":false},{"value":"port","variable":true},{"value":"/x/","variable":false},{"value":"[","variable":true},{"value":"y","variable":false},{"value":"]","variable":true}]},"enabled":false}`
	curatorString     = `{"name":"web","id":"b2","address":"h","port":null,"sslPort":null,"payload":"hello","registrationTimeUTC":5,"serviceType":"STATIC","uriSpec":null,"enabled":true}`
	curatorNulls      = `{"name":"web","id":"c3","address":null,"port":null,"sslPort":null,"payload":null,"registrationTimeUTC":0,"serviceType":"DYNAMIC","uriSpec":null,"enabled":true}`
)

func TestDecodeCurator(t *testing.T) {
	spec := MustParseURISpec("{scheme}://{address}:{port}/x/{ [ }y{ ] }")
	want := Instance{
		Name: "web", ID: "a1", Address: "10.0.0.1", Port: 8080, SSLPort: 8443,
		Payload:      json.RawMessage(`{"@class":"java.util.HashMap","zone":"eu"}`),
		Registration: time.UnixMilli(1700000000123).UTC(),
		ServiceType:  Dynamic,
		URISpec:      spec,
	}
	got, err := Decode([]byte(curatorCompatible))
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("compatible: %+v, %v\nwant %+v", got, err, want)
	}
	want.Disabled = true
	got, err = Decode([]byte(curatorFull))
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("full: %+v, %v\nwant %+v", got, err, want)
	}
	if u := got.URI(nil); u != "https://10.0.0.1:8080/x/{y}" { // Curator's build of the same
		t.Fatalf("URI %q", u)
	}
	got, err = Decode([]byte(curatorString))
	if err != nil || string(got.Payload) != `"hello"` || got.ServiceType != Static || got.Port != 0 || got.URISpec != nil || got.Disabled {
		t.Fatalf("string payload: %+v, %v", got, err)
	}
	got, err = Decode([]byte(curatorNulls))
	if err != nil || !reflect.DeepEqual(got, Instance{Name: "web", ID: "c3", ServiceType: Dynamic}) {
		t.Fatalf("nulls: %+v, %v", got, err)
	}
}

// What this package writes is what Curator's full serializer writes, field
// for field and in its order.
func TestEncodeAsCurator(t *testing.T) {
	for _, golden := range []string{curatorFull, curatorString, curatorNulls} {
		i, err := Decode([]byte(golden))
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(i)
		if err != nil || string(b) != golden {
			t.Fatalf("encode:\n got %s, %v\nwant %s", b, err, golden)
		}
	}
	// The zero values: an enabled dynamic instance, nulls for the rest.
	b, _ := json.Marshal(Instance{Name: "web", ID: "c3"})
	if string(b) != curatorNulls {
		t.Fatalf("zero fields: %s", b)
	}
}

func TestDecodeInvalid(t *testing.T) {
	for _, data := range []string{"", "  ", "{", "[]", `{"name":1}`, `{"uriSpec":"{x"}`} {
		if _, err := Decode([]byte(data)); !errors.Is(err, ErrInvalidInstance) && !errors.Is(err, ErrInvalidURISpec) {
			t.Errorf("Decode(%q) = %v, want ErrInvalidInstance or ErrInvalidURISpec", data, err)
		}
	}
	// Unknown fields are ignored, as Curator's reader ignores them.
	if i, err := Decode([]byte(`{"name":"a","id":"b","future":[1,2]}`)); err != nil || i.Name != "a" || i.Disabled {
		t.Fatalf("unknown field: %+v %v", i, err)
	}
}

func TestValidate(t *testing.T) {
	ok := Instance{Name: "web", ID: "a1"}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []Instance{
		{ID: "a"}, {Name: "a"}, {Name: "a/b", ID: "c"}, {Name: "a", ID: ".."},
		{Name: "a", ID: "b", ServiceType: "dynamic"}, {Name: "a", ID: "b", Port: 70000},
		{Name: "a", ID: "b", SSLPort: -1}, {Name: "a", ID: "b", Payload: json.RawMessage("{")},
	} {
		if err := bad.Validate(); !errors.Is(err, ErrInvalidInstance) {
			t.Errorf("Validate(%+v) = %v", bad, err)
		}
	}
}

func TestServiceTypeEphemeral(t *testing.T) {
	for typ, want := range map[ServiceType]bool{"": true, Dynamic: true, DynamicSequential: true, Static: false, Permanent: false} {
		if typ.Ephemeral() != want {
			t.Errorf("%q.Ephemeral() = %v", typ, !want)
		}
	}
}

// Decode holds read data to the rule Register holds an instance to
// (Validate): what is JSON but not an instance is ErrInvalidInstance,
// and Curator's JSON of a real instance is read.
func TestDecodeRefusesWhatIsNotAnInstance(t *testing.T) {
	for _, tc := range []struct{ name, data string }{
		{"null", `null`},
		{"null with spaces", " null\n"},
		{"empty object", `{}`},
		{"no id", `{"name":"web","address":"h","port":1}`},
		{"null id", `{"name":"web","id":null}`},
		{"no name", `{"id":"a1"}`},
		{"id with a slash", `{"name":"web","id":"a/b"}`},
		{"id ..", `{"name":"web","id":".."}`},
		{"id with NUL", `{"name":"web","id":"a\u0000b"}`},
		{"name with a slash", `{"name":"a/b","id":"a1"}`},
		{"port above 65535", `{"name":"web","id":"a1","port":99999}`},
		{"negative port", `{"name":"web","id":"a1","port":-1}`},
		{"ssl port above 65535", `{"name":"web","id":"a1","sslPort":65536}`},
		{"unknown service type", `{"name":"web","id":"a1","serviceType":"EPHEMERAL"}`},
		{"service type in lower case", `{"name":"web","id":"a1","serviceType":"dynamic"}`},
		{"a string", `"web"`},
		{"an array", `[{"name":"web","id":"a1"}]`},
		{"a port that is not a number", `{"name":"web","id":"a1","port":"80"}`},
	} {
		i, err := Decode([]byte(tc.data))
		if !errors.Is(err, ErrInvalidInstance) {
			t.Errorf("%s: Decode(%s) = %+v, %v; want ErrInvalidInstance", tc.name, tc.data, i, err)
		}
		if !reflect.DeepEqual(i, Instance{}) {
			t.Errorf("%s: Decode returned %+v with its error", tc.name, i)
		}
		// json.Unmarshal says the same, and leaves the instance as it was.
		got := Instance{Name: "kept", ID: "kept"}
		if err := json.Unmarshal([]byte(tc.data), &got); err == nil || got.Name != "kept" {
			t.Errorf("%s: json.Unmarshal = %v, instance %+v", tc.name, err, got)
		}
	}
	for _, golden := range []string{curatorCompatible, curatorFull, curatorString, curatorNulls} {
		if _, err := Decode([]byte(golden)); err != nil {
			t.Errorf("Curator's %s: %v", golden, err)
		}
	}
	for _, typ := range []ServiceType{Dynamic, DynamicSequential, Static, Permanent} {
		data := `{"name":"web","id":"a1","port":65535,"sslPort":1,"serviceType":"` + string(typ) + `"}`
		if _, err := Decode([]byte(data)); err != nil {
			t.Errorf("%s: %v", data, err)
		}
	}
}
