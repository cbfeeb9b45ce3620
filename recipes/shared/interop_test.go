package shared_test

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/testinfra/peertest"
	"github.com/zkrecipes/zkrecipes/recipes/shared"
	"github.com/zkrecipes/zkrecipes/retry"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// peerAdds is what a peer said of a batch of adds.
type peerAdds struct{ ok, no, failed int }

func parseAdded(line string) (peerAdds, error) {
	var a peerAdds
	if _, err := fmt.Sscanf(line, "ADDED %d %d %d", &a.ok, &a.no, &a.failed); err != nil {
		return a, fmt.Errorf("peer said %q: %w", line, err)
	}
	return a, nil
}

// peerKind is a peer counter on a node of an encoding.
type peerKind struct {
	name  string
	start func(t testing.TB, ens *zktest.Ensemble, path string) *peertest.Peer
}

var (
	curatorAtomicLong = peerKind{"Curator DistributedAtomicLong", func(t testing.TB, ens *zktest.Ensemble, p string) *peertest.Peer {
		return peertest.CuratorCounter(t, ens.ConnectString(), p, "atomiclong")
	}}
	curatorSharedCount = peerKind{"Curator SharedCount", func(t testing.TB, ens *zktest.Ensemble, p string) *peertest.Peer {
		return peertest.CuratorCounter(t, ens.ConnectString(), p, "sharedcount")
	}}
	kazooCuratorCounter = peerKind{"Kazoo Counter(support_curator=True)", func(t testing.TB, ens *zktest.Ensemble, p string) *peertest.Peer {
		return peertest.KazooCounter(t, ens.ConnectString(), p, true)
	}}
	kazooCounter = peerKind{"Kazoo Counter", func(t testing.TB, ens *zktest.Ensemble, p string) *peertest.Peer {
		return peertest.KazooCounter(t, ens.ConnectString(), p, false)
	}}
	// peersOf are the peers that read and write each encoding.
	peersOf = map[shared.Encoding][]peerKind{
		shared.Int64: {curatorAtomicLong},
		shared.Int32: {curatorSharedCount, kazooCuratorCounter},
		shared.Text:  {kazooCounter},
	}
)

// TestInteropCounters: Go Counters and the peers of each encoding add to
// one node at the same time; every add counts once, and each side reads
// the other's value.
func TestInteropCounters(t *testing.T) {
	ens := zkShared.Ensemble(t)
	root := ens.Root(t)
	ctx := ctxFor(t, 3*time.Minute)
	for _, enc := range []shared.Encoding{shared.Int64, shared.Int32, shared.Text} {
		t.Run(enc.String(), func(t *testing.T) {
			p := root + "/" + enc.String()
			var peers []*peertest.Peer
			for _, k := range peersOf[enc] {
				peers = append(peers, k.start(t, ens, p))
			}
			const goers, goAdds, peerAdds = 3, 30, 30
			var (
				wg   sync.WaitGroup
				mu   sync.Mutex
				want int64
			)
			for i := range goers {
				cn := newCounter(t, open(t, ens.Servers()), p, shared.WithEncoding(enc), shared.WithRetryPolicy(retry.Forever(time.Millisecond)))
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range goAdds {
						res, err := cn.Add(ctx, int64(i+1))
						if err != nil || !res.Succeeded {
							t.Errorf("Add = %+v, %v", res, err)
							return
						}
						mu.Lock()
						want += int64(i + 1)
						mu.Unlock()
					}
				}()
			}
			for i, peer := range peers {
				delta := int64(100 * (i + 1))
				wg.Add(1)
				go func() {
					defer wg.Done()
					line, err := peer.Ask(2*time.Minute, "add %d %d", delta, peerAdds)
					if err != nil {
						t.Error(err)
						return
					}
					t.Logf("peer %d: %s", i, line)
					a, err := parseAdded(line)
					if err != nil || a.failed != 0 {
						t.Errorf("peer %d: %+v, %v", i, a, err)
						return
					}
					mu.Lock()
					want += int64(a.ok) * delta
					mu.Unlock()
				}()
			}
			wg.Wait()
			got, err := newCounter(t, open(t, ens.Servers()), p, shared.WithEncoding(enc)).Get(ctx)
			if err != nil || got != want {
				t.Fatalf("counter %d, %v; want the sum of the adds, %d", got, err, want)
			}
			for _, peer := range peers {
				line, err := peer.Ask(time.Minute, "get")
				if err != nil {
					t.Fatal(err)
				}
				// Curator's SharedCount reads its watched copy: it may lag.
				zktest.Eventually(t, 10*time.Second, "the peer reads the value", func() error {
					if line != "VALUE "+strconv.FormatInt(want, 10) {
						line, err = peer.Ask(time.Minute, "get")
						if err == nil {
							err = fmt.Errorf("peer says %q, want %d", strings.TrimSpace(line), want)
						}
						return err
					}
					return nil
				})
			}
		})
	}
}
