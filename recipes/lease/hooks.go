package lease

// beforeWrite, when set (by tests), runs right before the record's
// transaction is sent.
var beforeWrite func()
