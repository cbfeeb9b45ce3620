package lease

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Kazoo's NonBlockingLease record, as kazoo/recipe/lease.py (2.8) writes
// it: json.dumps of {"version": 1, "holder": ident, "end": end} in that
// order, UTF-8, with the end as naive UTC "%Y-%m-%dT%H:%M:%S".
const (
	recordVersion = 1
	endLayout     = "2006-01-02T15:04:05"
	lockName      = "__lock__" // Kazoo's Lock node name (see Obtain)
)

// Record is what a lease's node says: who holds it, until when.
type Record struct {
	Holder string    // the holder's identifier
	End    time.Time // the end, in UTC, to the second
}

// encode writes r as Python's json.dumps does by default (", " and ": "
// between items, every character outside printable ASCII escaped as
// \uXXXX), so that the bytes are the ones Kazoo writes for the same
// record.
func (r Record) encode() []byte {
	var b strings.Builder
	b.WriteString(`{"version": `)
	b.WriteString(strconv.Itoa(recordVersion))
	b.WriteString(`, "holder": `)
	pyQuote(&b, r.Holder)
	b.WriteString(`, "end": `)
	pyQuote(&b, r.End.UTC().Format(endLayout))
	b.WriteString(`}`)
	return []byte(b.String())
}

// pyQuote writes s as a JSON string as Python's json.dumps does with
// ensure_ascii: the short escapes it knows, and \u with four lower-case
// hex digits (a surrogate pair above the BMP) for every other character
// outside ' '..'~'. s is valid UTF-8 (WithIdentifier checks).
func pyQuote(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			switch {
			case r >= ' ' && r <= '~':
				b.WriteRune(r)
			case r > 0xffff:
				r -= 0x10000
				fmt.Fprintf(b, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
			default:
				fmt.Fprintf(b, `\u%04x`, r)
			}
		}
	}
	b.WriteByte('"')
}

// decode reads a record as Kazoo does: JSON with a version, a holder and
// an end. A version other than 1 is ErrVersion (with the holder and end
// unread, as Kazoo reads them only after the version); anything else
// unreadable is ErrBadRecord.
func decode(data []byte) (Record, error) {
	var raw struct {
		Version json.RawMessage `json:"version"`
		Holder  *string         `json:"holder"`
		End     *string         `json:"end"`
	}
	if !utf8.Valid(data) {
		return Record{}, fmt.Errorf("%w: not UTF-8", ErrBadRecord)
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return Record{}, fmt.Errorf("%w: %v", ErrBadRecord, err)
	}
	if raw.Version == nil {
		return Record{}, fmt.Errorf("%w: no version", ErrBadRecord)
	}
	// Kazoo compares with != 1: a number equal to 1 passes, a string
	// or anything else does not.
	if v, err := strconv.ParseFloat(string(raw.Version), 64); err != nil || v != recordVersion {
		return Record{}, fmt.Errorf("%w: version %s", ErrVersion, raw.Version)
	}
	if raw.Holder == nil || raw.End == nil {
		return Record{}, fmt.Errorf("%w: no holder or no end", ErrBadRecord)
	}
	end, err := time.Parse(endLayout, *raw.End)
	if err != nil {
		return Record{}, fmt.Errorf("%w: end %q", ErrBadRecord, *raw.End)
	}
	return Record{Holder: *raw.Holder, End: end}, nil
}
