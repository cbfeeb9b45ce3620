package discovery

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"
)

func TestParseURISpec(t *testing.T) {
	u, err := ParseURISpec("{scheme}://{ address }:{port}/p")
	if err != nil {
		t.Fatal(err)
	}
	want := []URIPart{{"scheme", true}, {"://", false}, {"address", true}, {":", false}, {"port", true}, {"/p", false}}
	if !reflect.DeepEqual(u.Parts, want) {
		t.Fatalf("%+v", u.Parts)
	}
	if s := u.String(); s != "{scheme}://{address}:{port}/p" {
		t.Fatalf("String %q", s)
	}
	for _, bad := range []string{"{a", "a}", "{a{b}}", "}"} {
		if _, err := ParseURISpec(bad); !errors.Is(err, ErrInvalidURISpec) {
			t.Errorf("ParseURISpec(%q) = %v", bad, err)
		}
	}
	if u, err := ParseURISpec(""); err != nil || len(u.Parts) != 0 {
		t.Fatalf("empty: %+v %v", u, err)
	}
}

func TestBuild(t *testing.T) {
	i := &Instance{Name: "web", ID: "a1", Address: "h", Port: 80, Registration: time.UnixMilli(42), ServiceType: Permanent}
	u := MustParseURISpec("{scheme}://{address}:{port}{ssl-port}/{name}/{id}/{registration-time-utc}/{service-type}/{unknown}{[}{]}{v}")
	if got := u.Build(i, map[string]string{"v": "!"}); got != "http://h:80/web/a1/42/permanent/{}!" {
		t.Fatalf("%q", got)
	}
	i.SSLPort = 443
	if got := MustParseURISpec("{scheme}:{ssl-port}").Build(i, nil); got != "https:443" {
		t.Fatalf("%q", got)
	}
	// Without an instance only the braces, the default scheme and vars.
	if got := MustParseURISpec("{scheme}://{address}{x}").Build(nil, map[string]string{"x": "y", "scheme": "ftp"}); got != "ftp://y" {
		t.Fatalf("%q", got)
	}
}

func TestURISpecJSON(t *testing.T) {
	var u URISpec
	if err := json.Unmarshal([]byte(`"{scheme}://x"`), &u); err != nil || u.String() != "{scheme}://x" {
		t.Fatalf("template string: %+v %v", u, err)
	}
	b, _ := json.Marshal(MustParseURISpec("{a}b"))
	if string(b) != `{"parts":[{"value":"a","variable":true},{"value":"b","variable":false}]}` {
		t.Fatalf("%s", b)
	}
}
