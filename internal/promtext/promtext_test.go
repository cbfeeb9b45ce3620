package promtext_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/zkrecipes/zkrecipes/internal/promtext"
)

var fams = []promtext.Family{
	{Name: "zk_b", Help: "B's help, with a \\ and a\nline feed.", Type: "gauge"},
	{Name: "zk_a_total", Help: "A.", Type: "counter"},
	{Name: "zk_unused", Help: "Never sampled.", Type: "gauge"},
}

// TestWriteSortsFamiliesAndSamples: families by name, each with its HELP
// and TYPE once, samples by their labels, label names sorted, empty labels
// left out, whatever the order given.
func TestWriteSortsFamiliesAndSamples(t *testing.T) {
	samples := []promtext.Sample{
		{Name: "zk_b", Labels: []promtext.Label{{"path", "/b"}, {"layout", "curator"}}, Value: 2},
		{Name: "zk_a_total", Value: 7},
		{Name: "zk_b", Labels: []promtext.Label{{"path", "/a"}, {"layout", "kazoo"}, {"side", ""}}, Value: 0.5},
	}
	var b strings.Builder
	if err := promtext.Write(&b, fams, samples); err != nil {
		t.Fatal(err)
	}
	want := `# HELP zk_a_total A.
# TYPE zk_a_total counter
zk_a_total 7
# HELP zk_b B's help, with a \\ and a\nline feed.
# TYPE zk_b gauge
zk_b{layout="curator",path="/b"} 2
zk_b{layout="kazoo",path="/a"} 0.5
`
	if b.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", b.String(), want)
	}
	// The same samples in another order: the same bytes.
	var again strings.Builder
	if err := promtext.Write(&again, fams, []promtext.Sample{samples[2], samples[0], samples[1]}); err != nil {
		t.Fatal(err)
	}
	if again.String() != want {
		t.Fatalf("another order gave\n%s", again.String())
	}
}

// TestEscapeLabelValue: backslash, double quote and line feed are escaped,
// invalid UTF-8 is replaced, anything else is kept as is.
func TestEscapeLabelValue(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`plain`, `plain`},
		{`a\b`, `a\\b`},
		{`say "hi"`, `say \"hi\"`},
		{"two\nlines", `two\nlines`},
		{"tab\there", "tab\there"},
		{"h\xffi", "h\uFFFDi"},
		{"ünïcode", "ünïcode"},
		{`\"` + "\n", `\\\"\n`},
	} {
		if got := promtext.EscapeLabelValue(c.in); got != c.want {
			t.Errorf("EscapeLabelValue(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	var b strings.Builder
	err := promtext.Write(&b, fams, []promtext.Sample{{Name: "zk_b", Labels: []promtext.Label{{"holder", "x\"y\n"}}, Value: 1}})
	if err != nil || !strings.Contains(b.String(), `zk_b{holder="x\"y\n"} 1`+"\n") {
		t.Fatalf("Write of an escaped label: %v\n%s", err, b.String())
	}
}

func TestFormatValue(t *testing.T) {
	for _, c := range []struct {
		in   float64
		want string
	}{
		{0, "0"}, {1, "1"}, {-3, "-3"}, {0.25, "0.25"}, {1e21, "1e+21"},
		{281474976710657, "281474976710657"},
		{math.Inf(1), "+Inf"}, {math.Inf(-1), "-Inf"}, {math.NaN(), "NaN"},
	} {
		if got := promtext.FormatValue(c.in); got != c.want {
			t.Errorf("FormatValue(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestWriteRefusesWhatPrometheusWouldReject: an undeclared family, bad
// names, an unknown type, a label twice, and two samples of one series;
// nothing is written then.
func TestWriteRefusesWhatPrometheusWouldReject(t *testing.T) {
	for _, c := range []struct {
		name    string
		fams    []promtext.Family
		samples []promtext.Sample
		want    error
	}{
		{"undeclared", fams, []promtext.Sample{{Name: "zk_c"}}, promtext.ErrBadName},
		{"metric name", []promtext.Family{{Name: "zk-c", Type: "gauge"}}, nil, promtext.ErrBadName},
		{"digit first", []promtext.Family{{Name: "1zk", Type: "gauge"}}, nil, promtext.ErrBadName},
		{"type", []promtext.Family{{Name: "zk_c", Type: "info"}}, nil, promtext.ErrBadName},
		{"label name", fams, []promtext.Sample{{Name: "zk_b", Labels: []promtext.Label{{"a-b", "x"}}}}, promtext.ErrBadName},
		{"reserved label", fams, []promtext.Sample{{Name: "zk_b", Labels: []promtext.Label{{"__name__", "x"}}}}, promtext.ErrBadName},
		{"label twice", fams, []promtext.Sample{{Name: "zk_b", Labels: []promtext.Label{{"a", "x"}, {"a", "y"}}}}, promtext.ErrBadName},
		{"duplicate", fams, []promtext.Sample{
			{Name: "zk_b", Labels: []promtext.Label{{"a", "x"}, {"b", ""}}, Value: 1},
			{Name: "zk_b", Labels: []promtext.Label{{"a", "x"}}, Value: 2},
		}, promtext.ErrDuplicate},
	} {
		var b strings.Builder
		err := promtext.Write(&b, c.fams, c.samples)
		if !errors.Is(err, c.want) || b.Len() != 0 {
			t.Errorf("%s: err %v, wrote %q; want %v and nothing", c.name, err, b.String(), c.want)
		}
	}
}
