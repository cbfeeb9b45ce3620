package lease

// EncodeRecord and DecodeRecord are the record's encoding, for its tests.
func EncodeRecord(r Record) []byte          { return r.encode() }
func DecodeRecord(b []byte) (Record, error) { return decode(b) }

// BeforeWrite sets a function run right before the record's transaction
// is sent (nil: none); tests drop its answer.
func BeforeWrite(f func()) { beforeWrite = f }
