package shared_test

import (
	"errors"
	"math"
	"testing"

	"github.com/zkrecipes/zkrecipes/recipes/shared"
)

func TestDecode(t *testing.T) {
	for _, tc := range []struct {
		enc  shared.Encoding
		data string
		want int64
		bad  bool
	}{
		{shared.Int64, "", 0, false},
		{shared.Int64, "\x00\x00\x00\x00\x00\x00\x00\x2a", 42, false},
		{shared.Int64, "\xff\xff\xff\xff\xff\xff\xff\xfe", -2, false},
		{shared.Int64, "\x80\x00\x00\x00\x00\x00\x00\x00", math.MinInt64, false},
		{shared.Int64, "\x00\x00\x00\x2a", 0, true},                     // a count is not a long
		{shared.Int64, "\x00\x00\x00\x00\x00\x00\x00\x2a\x00", 0, true}, // Curator would read the first 8
		{shared.Int32, "", 0, false},                                    // Kazoo's ensure_path
		{shared.Int32, "\x00\x00\x00\x07", 7, false},
		{shared.Int32, "\xff\xff\xff\xff", -1, false},
		{shared.Int32, "\x7f\xff\xff\xff", math.MaxInt32, false},
		{shared.Int32, "\x00\x00\x07", 0, true},
		{shared.Int32, "\x00\x00\x00\x00\x00\x00\x00\x07", 0, true},
		{shared.Text, "", 0, false},
		{shared.Text, "0", 0, false},
		{shared.Text, "12", 12, false},
		{shared.Text, "-12", -12, false},
		{shared.Text, "9223372036854775807", math.MaxInt64, false},
		{shared.Text, "9223372036854775808", 0, true}, // a Python int, beyond 64 bits
		{shared.Text, "+1", 0, true},
		{shared.Text, "1.5", 0, true}, // a Kazoo float counter
		{shared.Text, " 1", 0, true},
		{shared.Text, "-", 0, true},
		{shared.Text, "1_000", 0, true},
	} {
		got, err := tc.enc.Decode([]byte(tc.data))
		if tc.bad {
			if !errors.Is(err, shared.ErrCorrupt) {
				t.Errorf("%s.Decode(%q) = %d, %v; want ErrCorrupt", tc.enc, tc.data, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s.Decode(%q) = %d, %v; want %d", tc.enc, tc.data, got, err, tc.want)
		}
	}
}

func TestEncode(t *testing.T) {
	for _, tc := range []struct {
		enc  shared.Encoding
		n    int64
		want string
		bad  bool
	}{
		{shared.Int64, 42, "\x00\x00\x00\x00\x00\x00\x00\x2a", false},
		{shared.Int64, -2, "\xff\xff\xff\xff\xff\xff\xff\xfe", false},
		{shared.Int32, 7, "\x00\x00\x00\x07", false},
		{shared.Int32, -1, "\xff\xff\xff\xff", false},
		{shared.Int32, math.MaxInt32 + 1, "", true},
		{shared.Int32, math.MinInt32 - 1, "", true},
		{shared.Text, -12, "-12", false},
		{shared.Text, 0, "0", false},
	} {
		got, err := tc.enc.Encode(tc.n)
		if tc.bad {
			if !errors.Is(err, shared.ErrOverflow) {
				t.Errorf("%s.Encode(%d) = %q, %v; want ErrOverflow", tc.enc, tc.n, got, err)
			}
			continue
		}
		if err != nil || string(got) != tc.want {
			t.Errorf("%s.Encode(%d) = %q, %v; want %q", tc.enc, tc.n, got, err, tc.want)
		}
		back, err := tc.enc.Decode(got)
		if err != nil || back != tc.n {
			t.Errorf("%s round trip of %d: %d, %v", tc.enc, tc.n, back, err)
		}
	}
}

func TestAddOverflow(t *testing.T) {
	for _, tc := range []struct {
		enc      shared.Encoding
		a, delta int64
		bad      bool
	}{
		{shared.Int32, math.MaxInt32 - 1, 1, false},
		{shared.Int32, math.MaxInt32, 1, true},
		{shared.Int32, math.MinInt32, -1, true},
		{shared.Int32, math.MinInt32, 1, false},
		{shared.Int64, math.MaxInt64, 1, true},
		{shared.Int64, math.MinInt64, -1, true},
		{shared.Int64, math.MaxInt64, -1, false},
		{shared.Text, math.MaxInt64, math.MinInt64, false},
		{shared.Text, -5, math.MinInt64, true},
	} {
		sum, err := tc.enc.Add(tc.a, tc.delta)
		if tc.bad != errors.Is(err, shared.ErrOverflow) || !tc.bad && (err != nil || sum != tc.a+tc.delta) {
			t.Errorf("%s: %d + %d = %d, %v", tc.enc, tc.a, tc.delta, sum, err)
		}
	}
}

func TestParseEncoding(t *testing.T) {
	for _, e := range []shared.Encoding{shared.Int64, shared.Int32, shared.Text} {
		if got, ok := shared.ParseEncoding(e.String()); !ok || got != e {
			t.Errorf("ParseEncoding(%q) = %v, %v", e, got, ok)
		}
	}
	if _, ok := shared.ParseEncoding("float"); ok {
		t.Error("ParseEncoding(float) succeeded")
	}
}
