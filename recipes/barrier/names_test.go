package barrier

import (
	"reflect"
	"testing"
)

func TestMembers(t *testing.T) {
	got := members([]string{"c", ReadyName, "a", "b-ready", "readyx"})
	want := []string{"a", "b-ready", "c", "readyx"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("members: %v, want %v", got, want)
	}
	if got := members(nil); len(got) != 0 {
		t.Fatalf("members(nil): %v", got)
	}
}

func TestAmong(t *testing.T) {
	got := among([]string{"a", "b", "c", "d"}, map[string]bool{"b": true, "d": true, "x": true})
	if want := []string{"b", "d"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("among: %v, want %v", got, want)
	}
}

// TestNextLeaveStep: the recipe's leave order, and that a member whose
// node is deleted is done only when none it waits for is left.
func TestNextLeaveStep(t *testing.T) {
	for _, tc := range []struct {
		name    string
		live    []string
		own     string
		deleted bool
		want    leaveStep
	}{
		{"alone", []string{"m"}, "m", false, leaveStep{done: true, deleteOwn: true}},
		{"lowest waits for the highest", []string{"a", "b", "c"}, "a", false, leaveStep{watch: "c"}},
		{"middle deletes, waits for the lowest", []string{"a", "b", "c"}, "b", false, leaveStep{deleteOwn: true, watch: "a"}},
		{"highest deletes, waits for the lowest", []string{"a", "b", "c"}, "c", false, leaveStep{deleteOwn: true, watch: "a"}},
		{"own node gone", []string{"a", "c"}, "b", false, leaveStep{gone: true}},
		{"own node gone, none left", nil, "b", false, leaveStep{gone: true}},
		{"deleted, the lowest still there", []string{"a"}, "b", true, leaveStep{watch: "a"}},
		{"deleted, others there", []string{"a", "c"}, "b", true, leaveStep{watch: "a"}},
		{"deleted, all gone", nil, "b", true, leaveStep{done: true}},
	} {
		if got := nextLeaveStep(tc.live, tc.own, tc.deleted); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
