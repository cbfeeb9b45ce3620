package connection_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// TestHandshakeUnansweredTriesAgain: the server makes the session, and
// its answer to the handshake does not come (the proxy holds it back for
// 6 s), as a new ensemble's leader once made a session and never
// answered (an open of mutex's TestHolderOnPausedServerLearnsFirst got
// no session in 15 s). go-zookeeper alone waits ten read timeouts for
// that answer (13.3 s at a 2 s session timeout), and takes the session
// when the answer comes. The client gives up on the answer after the
// session timeout (one server) and opens its session on a new
// connection: not the session the first handshake made.
func TestHandshakeUnansweredTriesAgain(t *testing.T) {
	t.Parallel()
	ens := zktest.Start(t, zktest.WithServers(1)) // its own: the server's connections are the test's
	p := ens.Proxy(t)
	p.DelayReplies(6 * time.Second)
	type opened struct {
		c   *connection.Client
		err error
	}
	done := make(chan opened, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := connection.Open(ctx, p.Servers(), connection.WithSessionTimeout(2*time.Second))
		done <- opened{c, err}
	}()
	zktest.Eventually(t, 10*time.Second, "the server answers the handshake", func() error {
		if p.LastAnswered().IsZero() {
			return errors.New("no answer read yet")
		}
		return nil
	})
	// The answer is held back; those of new connections are not.
	p.DelayReplies(0)
	cons, err := zktest.FourLetter(ens.Servers()[0], "cons", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	sids := regexp.MustCompile(`sid=(0x[0-9a-f]+)`).FindAllStringSubmatch(cons, -1)
	if len(sids) != 1 {
		t.Fatalf("want one session on the server, cons says:\n%s", cons)
	}
	first := sids[0][1]
	r := <-done
	if r.err != nil {
		t.Fatalf("open: %v", r.err)
	}
	defer r.c.Close()
	if got := r.c.Session().ID(); fmt.Sprintf("%#x", got) == first {
		t.Fatalf("the client took session %s, whose handshake answer it waited for", first)
	}
	if _, _, err := r.c.Exists(ctxFor(t, 10*time.Second), "/"); err != nil {
		t.Fatal(err)
	}
}
