package connection

import (
	"errors"
	"testing"

	"github.com/go-zookeeper/zk"
)

// go-zookeeper reports the reconfig's own refusals by their codes; the
// client gives them sentinels and passes every other error through.
func TestReconfigRefusalsHaveSentinels(t *testing.T) {
	other := errors.New("unknown error: -130")
	for _, tc := range []struct {
		in, want error
	}{
		{nil, nil},
		{errors.New("unknown error: -13"), ErrNewConfigNoQuorum},
		{errors.New("unknown error: -14"), ErrReconfigInProgress},
		{zk.ErrReconfigDisabled, zk.ErrReconfigDisabled},
		{other, other},
	} {
		if got := reconfigErr(tc.in); !errors.Is(got, tc.want) || (tc.want == nil) != (got == nil) {
			t.Errorf("reconfigErr(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
