package group_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/peertest"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/group"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

var shared = zktest.NewShared()

func TestMain(m *testing.M) { testkit.Main(m, shared, peertest.Cleanup) }

var (
	open   = testkit.Open
	ctxFor = testkit.Ctx
)

// join returns a started member, closed when the test ends.
func join(t testing.TB, c *connection.Client, dir, id string, opts ...group.Option) *group.Group {
	t.Helper()
	g, err := group.New(c, dir, id, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close(ctxFor(t, 10*time.Second)) })
	if err := g.WaitJoined(ctxFor(t, 20*time.Second)); err != nil {
		t.Fatal(err)
	}
	return g
}

// render writes members as "id=data,..." (ids sorted).
func render(ms []group.Member) string {
	var b []string
	for _, m := range ms {
		b = append(b, m.ID+"="+string(m.Data))
	}
	return strings.Join(b, ",")
}

// sees waits until g's view renders as want.
func sees(t testing.TB, g *group.Group, want string) {
	t.Helper()
	zktest.Eventually(t, 20*time.Second, fmt.Sprintf("the view of %s is %q", g.Path(), want), func() error {
		if got := render(g.Members()); got != want {
			return fmt.Errorf("view %q", got)
		}
		return nil
	})
}

// next returns the next event of ch that is not about trust.
func next(t testing.TB, ch <-chan group.Event) group.Event {
	t.Helper()
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatal("events closed")
			}
			switch ev.Type {
			case group.Trusted, group.Untrusted, group.Initialized:
				continue
			}
			return ev
		case <-time.After(20 * time.Second):
			t.Fatal("no event within 20s")
		}
	}
}

var _ = context.Background
