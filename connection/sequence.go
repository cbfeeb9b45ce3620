package connection

import (
	"errors"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/errtext"
)

// ErrSequenceExhausted means a directory's sequence numbers are used up,
// and the directory must be deleted and made again before sequential
// nodes can be ordered in it again.
//
// ZooKeeper names a sequential node after its parent's count of child
// creations ("%010d"; deletes do not count), a signed 32-bit number.
// ZooKeeper 3.6 and later stop the count at 2147483647: every later
// child gets that number too (a name that repeats is refused with
// NodeExists), and creates in flight behind one at the limit get
// negative numbers. ZooKeeper 3.5 and older let it wrap to negative
// numbers. Either way, the names no longer tell the order of creation.
// Sequential creates fail with an error that wraps it when the server
// refuses a repeated name, and every recipe refuses a node numbered
// 2147483647 or below 0 with it (deleting the node). A lock directory is
// a container: the server deletes it once it is empty, and the next
// contender makes it again with a new count.
var ErrSequenceExhausted = errors.New("connection: sequence exhausted: delete the directory and make it again")

// sequentialErr maps the error of a sequential create: NodeExists means
// the name the directory's counter gave was taken already, which happens
// when the counter repeats.
func sequentialErr(err error) error {
	if errors.Is(err, zk.ErrNodeExists) {
		return errtext.Errorf("%w (%w)", ErrSequenceExhausted, err)
	}
	return err
}
