package lease_test

import (
	"errors"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/recipes/lease"
)

// TestRecordIsKazoosJSON: the bytes are Python's json.dumps of Kazoo's
// dict, escapes and all (the expected lines are Python 3's output).
func TestRecordIsKazoosJSON(t *testing.T) {
	end := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	cases := map[string]string{
		"job on host-1":   `{"version": 1, "holder": "job on host-1", "end": "2026-12-07T12:00:00"}`,
		`q"uote\back`:     `{"version": 1, "holder": "q\"uote\\back", "end": "2026-12-07T12:00:00"}`,
		"tab\tnl\n":       `{"version": 1, "holder": "tab\tnl\n", "end": "2026-12-07T12:00:00"}`,
		"café 日本":         `{"version": 1, "holder": "caf\u00e9 \u65e5\u672c", "end": "2026-12-07T12:00:00"}`,
		"emoji 😀":         `{"version": 1, "holder": "emoji \ud83d\ude00", "end": "2026-12-07T12:00:00"}`,
		"del\x7f ctl\x01": `{"version": 1, "holder": "del\u007f ctl\u0001", "end": "2026-12-07T12:00:00"}`,
	}
	for holder, want := range cases {
		got := lease.EncodeRecord(lease.Record{Holder: holder, End: end})
		if string(got) != want {
			t.Errorf("holder %q:\n got %s\nwant %s", holder, got, want)
		}
		back, err := lease.DecodeRecord(got)
		if err != nil || back.Holder != holder || !back.End.Equal(end) {
			t.Errorf("holder %q read back as %+v, %v", holder, back, err)
		}
	}
	// Another zone is written as UTC.
	got := lease.EncodeRecord(lease.Record{Holder: "h", End: end.In(time.FixedZone("x", 3600))})
	if want := `{"version": 1, "holder": "h", "end": "2026-12-07T12:00:00"}`; string(got) != want {
		t.Errorf("zone +1: %s", got)
	}
}

func TestRecordRefusesWhatKazooRefuses(t *testing.T) {
	cases := []struct {
		data string
		want error
	}{
		{`{"version": 2, "holder": "h", "end": "2026-12-07T12:00:00"}`, lease.ErrVersion},
		{`{"version": "1", "holder": "h", "end": "2026-12-07T12:00:00"}`, lease.ErrVersion},
		{`{"version": null, "holder": "h", "end": "2026-12-07T12:00:00"}`, lease.ErrVersion},
		{`{"holder": "h", "end": "2026-12-07T12:00:00"}`, lease.ErrBadRecord},
		{`{"version": 1, "end": "2026-12-07T12:00:00"}`, lease.ErrBadRecord},
		{`{"version": 1, "holder": "h"}`, lease.ErrBadRecord},
		{`{"version": 1, "holder": "h", "end": "tomorrow"}`, lease.ErrBadRecord},
		{`{"version": 1, "holder": 5, "end": "2026-12-07T12:00:00"}`, lease.ErrBadRecord},
		{`not json`, lease.ErrBadRecord},
		{"", lease.ErrBadRecord},
		{"\xff\xfe", lease.ErrBadRecord},
	}
	for _, c := range cases {
		if _, err := lease.DecodeRecord([]byte(c.data)); !errors.Is(err, c.want) {
			t.Errorf("%q: %v, want %v", c.data, err, c.want)
		}
	}
	// Version 1.0 is 1 to Python, as to Kazoo.
	if _, err := lease.DecodeRecord([]byte(`{"version": 1.0, "holder": "h", "end": "2026-12-07T12:00:00"}`)); err != nil {
		t.Errorf("version 1.0: %v", err)
	}
}
