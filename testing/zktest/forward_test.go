package zktest

import (
	"reflect"
	"testing"

	"github.com/zkrecipes/zkrecipes/internal/zkserver"
)

// TestEveryMethodIsForwarded: Ensemble and Proxy are types of their own,
// so that go doc shows their methods; each method of the internal types
// they wrap must be theirs too, with the same signature.
func TestEveryMethodIsForwarded(t *testing.T) {
	for _, tc := range []struct{ inner, outer reflect.Type }{
		{reflect.TypeOf(&zkserver.Ensemble{}), reflect.TypeOf(&Ensemble{})},
		{reflect.TypeOf(&zkserver.Proxy{}), reflect.TypeOf(&Proxy{})},
	} {
		for i := range tc.inner.NumMethod() {
			in := tc.inner.Method(i)
			out, ok := tc.outer.MethodByName(in.Name)
			if !ok {
				t.Errorf("%v has no method %s of %v", tc.outer, in.Name, tc.inner)
				continue
			}
			// Compare without the receivers.
			if !sameSignature(in.Type, out.Type) {
				t.Errorf("%v.%s is %v, %v's is %v", tc.outer, in.Name, out.Type, tc.inner, in.Type)
			}
		}
	}
}

func sameSignature(a, b reflect.Type) bool {
	if a.NumIn() != b.NumIn() || a.NumOut() != b.NumOut() || a.IsVariadic() != b.IsVariadic() {
		return false
	}
	for i := 1; i < a.NumIn(); i++ {
		if a.In(i) != b.In(i) {
			return false
		}
	}
	for i := range a.NumOut() {
		if a.Out(i) != b.Out(i) {
			return false
		}
	}
	return true
}
