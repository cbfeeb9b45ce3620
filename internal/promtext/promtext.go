// Package promtext writes metrics in Prometheus's text exposition format
// (version 0.0.4): https://prometheus.io/docs/instrumenting/exposition_formats/.
//
// It is the small part of the format an exporter of gauges and counters
// needs, written by hand so that the main module takes no dependency on
// a Prometheus client. Output is deterministic: families sorted by name,
// each with its HELP and TYPE lines, its samples sorted by their labels
// (label names in order within a sample), so that two scrapes of the same
// state are the same bytes.
package promtext

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ContentType is the Content-Type of the text format.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// Family is a metric's HELP text and TYPE: "gauge", "counter" or
// "untyped".
type Family struct {
	Name string
	Help string
	Type string
}

// Label is one label of a sample. A label whose value is empty is left
// out, as Prometheus treats it as absent.
type Label struct {
	Name, Value string
}

// Sample is one series' value.
type Sample struct {
	Name   string
	Labels []Label
	Value  float64
}

// Errors of Write.
var (
	// ErrBadName: a metric or label name outside the format's alphabet, a
	// family with no declaration, or a type the format does not know.
	ErrBadName = errors.New("promtext: invalid metric")
	// ErrDuplicate: two samples of one name with the same labels, which
	// Prometheus would reject from one scrape.
	ErrDuplicate = errors.New("promtext: duplicate sample")
)

// Write writes the samples, grouped by family, to w. Every sample's name
// must be declared in fams; families without samples are left out. It
// writes nothing when it returns ErrBadName or ErrDuplicate.
func Write(w io.Writer, fams []Family, samples []Sample) error {
	byName := make(map[string]Family, len(fams))
	for _, f := range fams {
		if !validMetricName(f.Name) {
			return fmt.Errorf("%w: metric name %q", ErrBadName, f.Name)
		}
		switch f.Type {
		case "gauge", "counter", "untyped":
		default:
			return fmt.Errorf("%w: %s: type %q", ErrBadName, f.Name, f.Type)
		}
		byName[f.Name] = f
	}
	type line struct {
		name, labels string
		value        float64
	}
	lines := make([]line, 0, len(samples))
	for _, s := range samples {
		if _, ok := byName[s.Name]; !ok {
			return fmt.Errorf("%w: %s is not declared", ErrBadName, s.Name)
		}
		labels, err := labelText(s.Labels)
		if err != nil {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
		lines = append(lines, line{s.Name, labels, s.Value})
	}
	slices.SortFunc(lines, func(a, b line) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		return strings.Compare(a.labels, b.labels)
	})
	for i := 1; i < len(lines); i++ {
		if lines[i].name == lines[i-1].name && lines[i].labels == lines[i-1].labels {
			return fmt.Errorf("%w: %s%s", ErrDuplicate, lines[i].name, lines[i].labels)
		}
	}
	bw := bufio.NewWriter(w)
	for i, l := range lines {
		if i == 0 || lines[i-1].name != l.name {
			f := byName[l.name]
			bw.WriteString("# HELP " + l.name + " " + escapeHelp(f.Help) + "\n")
			bw.WriteString("# TYPE " + l.name + " " + f.Type + "\n")
		}
		bw.WriteString(l.name)
		bw.WriteString(l.labels)
		bw.WriteByte(' ')
		bw.WriteString(FormatValue(l.value))
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// labelText is the {name="value",...} part of a sample line, names
// sorted, empty values left out; "" with no labels.
func labelText(labels []Label) (string, error) {
	ls := make([]Label, 0, len(labels))
	for _, l := range labels {
		if !validLabelName(l.Name) {
			return "", fmt.Errorf("%w: label name %q", ErrBadName, l.Name)
		}
		if l.Value != "" {
			ls = append(ls, l)
		}
	}
	if len(ls) == 0 {
		return "", nil
	}
	slices.SortFunc(ls, func(a, b Label) int { return strings.Compare(a.Name, b.Name) })
	var b strings.Builder
	b.WriteByte('{')
	for i, l := range ls {
		if i > 0 {
			if ls[i-1].Name == l.Name {
				return "", fmt.Errorf("%w: label %q twice", ErrBadName, l.Name)
			}
			b.WriteByte(',')
		}
		b.WriteString(l.Name)
		b.WriteString(`="`)
		b.WriteString(EscapeLabelValue(l.Value))
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String(), nil
}

// EscapeLabelValue escapes a label value as the format asks: backslash,
// double quote and line feed. Bytes that are not UTF-8 become U+FFFD, as
// Prometheus accepts UTF-8 only.
func EscapeLabelValue(s string) string {
	if !strings.ContainsAny(s, "\\\"\n") && utf8.ValidString(s) {
		return s
	}
	return labelEscaper.Replace(strings.ToValidUTF8(s, "\uFFFD"))
}

var (
	labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
)

// escapeHelp escapes HELP text: backslash and line feed.
func escapeHelp(s string) string {
	return helpEscaper.Replace(strings.ToValidUTF8(s, "\uFFFD"))
}

// FormatValue writes a value as the format spells it: a whole number
// below 2^53 in digits (a zxid stays readable), else Go's shortest float;
// +Inf, -Inf, NaN.
func FormatValue(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	case v == math.Trunc(v) && math.Abs(v) < 1<<53:
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

func validMetricName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		letter := c == '_' || c == ':' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
		if !letter && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return true
}

func validLabelName(s string) bool {
	if s == "" || strings.HasPrefix(s, "__") {
		return false
	}
	for i, c := range s {
		letter := c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
		if !letter && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return true
}
