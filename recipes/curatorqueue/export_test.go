package curatorqueue

// Exported for the tests of the external test package.
var (
	EncodeItems  = encodeItems
	DecodeItems  = decodeItems
	PriorityName = priorityName
	EpochName    = epochName
	EpochOf      = epochOf
	ParseID      = parseID
	IDName       = idName
)

// Order is order for the variant named: "plain", "priority", "delay", "id".
func Order(variant string, names []string) []string {
	k := map[string]kind{"plain": plainKind, "priority": priorityKind, "delay": delayKind, "id": idKind}[variant]
	return order(k, names)
}
