package queue

// AfterTakenMade has q call f in a take's goroutine the moment the create
// of its taken node is answered — after the head of the line has started
// to leave it, before the node is read back and the entry read.
func AfterTakenMade(q *Queue, f func()) { q.afterMade = f }

// BeforeTakenCreate has q call f in a take's goroutine just before the
// create of its taken node is sent — after the head of the line has
// started to leave it.
func BeforeTakenCreate(q *Queue, f func()) { q.beforeCreate = f }
