package discovery

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/zkrecipes/zkrecipes/internal/errtext"
)

// URISpec is Curator's UriSpec: a template of literal parts and {variable}
// parts, built into a URI for an instance. The variables an instance fills
// are scheme (https when it has an SSL port, else http), name, id, address,
// port, ssl-port, registration-time-utc and service-type (lower case);
// [ and ] give literal braces. A variable nobody fills is left out.
//
// Its JSON is Curator's: {"parts":[{"value":"scheme","variable":true},…]}.
type URISpec struct {
	Parts []URIPart `json:"parts"`
}

// URIPart is one part of a URISpec: a literal, or the name of a variable.
type URIPart struct {
	Value    string `json:"value"`
	Variable bool   `json:"variable"`
}

// ErrInvalidURISpec is returned for a template with unbalanced braces.
var ErrInvalidURISpec = errors.New("discovery: invalid uri spec")

// ParseURISpec parses a template such as "{scheme}://{address}:{port}".
// Variable names are trimmed, as Curator trims them.
func ParseURISpec(spec string) (*URISpec, error) {
	u := &URISpec{Parts: []URIPart{}}
	inside := false
	rest := spec
	for rest != "" {
		i := strings.IndexAny(rest, "{}")
		if i < 0 {
			i = len(rest)
		}
		if i > 0 {
			tok := rest[:i]
			if inside {
				tok = strings.TrimSpace(tok)
			}
			u.Parts = append(u.Parts, URIPart{Value: tok, Variable: inside})
			rest = rest[i:]
			continue
		}
		switch rest[0] {
		case '{':
			if inside {
				return nil, errtext.Errorf("%w: %q: { inside a variable", ErrInvalidURISpec, spec)
			}
			inside = true
		case '}':
			if !inside {
				return nil, errtext.Errorf("%w: %q: } without {", ErrInvalidURISpec, spec)
			}
			inside = false
		}
		rest = rest[1:]
	}
	if inside {
		return nil, errtext.Errorf("%w: %q: a variable is not closed", ErrInvalidURISpec, spec)
	}
	return u, nil
}

// MustParseURISpec is ParseURISpec for templates known to be valid; it
// panics on an invalid one.
func MustParseURISpec(spec string) *URISpec {
	u, err := ParseURISpec(spec)
	if err != nil {
		panic(err)
	}
	return u
}

// Build fills the template with vars, over the instance's own variables
// (when i is not nil) and the literal braces; vars win.
func (u *URISpec) Build(i *Instance, vars map[string]string) string {
	local := map[string]string{"[": "{", "]": "}", "scheme": "http"}
	if i != nil {
		local["name"] = i.Name
		local["id"] = i.ID
		local["address"] = i.Address
		local["port"] = portString(i.Port)
		local["ssl-port"] = portString(i.SSLPort)
		local["registration-time-utc"] = ""
		if !i.Registration.IsZero() {
			local["registration-time-utc"] = strconv.FormatInt(i.Registration.UnixMilli(), 10)
		}
		t := i.ServiceType
		if t == "" {
			t = Dynamic
		}
		local["service-type"] = strings.ToLower(string(t))
		if i.SSLPort != 0 {
			local["scheme"] = "https"
		}
	}
	for k, v := range vars {
		local[k] = v
	}
	var b strings.Builder
	for _, p := range u.Parts {
		if !p.Variable {
			b.WriteString(p.Value)
		} else if v, ok := local[p.Value]; ok {
			b.WriteString(v)
		}
	}
	return b.String()
}

// String gives the template back: "{scheme}://{address}:{port}".
func (u *URISpec) String() string {
	var b strings.Builder
	for _, p := range u.Parts {
		if p.Variable {
			b.WriteString("{" + p.Value + "}")
		} else {
			b.WriteString(p.Value)
		}
	}
	return b.String()
}

// UnmarshalJSON reads Curator's parts, and, for a hand-written node, a
// plain template string.
func (u *URISpec) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		p, err := ParseURISpec(s)
		if err != nil {
			return err
		}
		*u = *p
		return nil
	}
	var w struct {
		Parts []URIPart `json:"parts"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return errtext.Errorf("%w: %v", ErrInvalidURISpec, err)
	}
	u.Parts = w.Parts
	if u.Parts == nil {
		u.Parts = []URIPart{}
	}
	return nil
}

func portString(p int) string {
	if p == 0 {
		return "" // Curator's null
	}
	return strconv.Itoa(p)
}
