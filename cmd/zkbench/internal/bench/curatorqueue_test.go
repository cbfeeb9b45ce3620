package bench

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestQueueItemsCountEachOnce: a run's items are taken once each; the last
// of them says so, and an item taken twice or not of the run is an error.
func TestQueueItemsCountEachOnce(t *testing.T) {
	its := newItems(3)
	for i, b := range []string{"2", "0"} {
		if last, err := its.take([]byte(b)); err != nil || last {
			t.Fatalf("take %d (%s): last %v, %v", i, b, last, err)
		}
	}
	if _, err := its.take([]byte("0")); err == nil || !strings.Contains(err.Error(), "taken twice") {
		t.Fatalf("item 0 again: %v", err)
	}
	for _, b := range []string{"3", "-1", "x", ""} {
		if _, err := its.take([]byte(b)); err == nil {
			t.Fatalf("item %q taken", b)
		}
	}
	if last, err := its.take([]byte("1")); err != nil || !last {
		t.Fatalf("the last item: last %v, %v", last, err)
	}
}

// TestCuratorQueueMarkdownRatios: a row per queue measured, in the table's
// order, with Curator ÷ zkrecipes where both ran and the requests per
// item of each; a row without Curator leaves its cells empty.
func TestCuratorQueueMarkdownRatios(t *testing.T) {
	r := &CuratorQueueResults{
		Cfg: CuratorQueueConfig{Rounds: 3, Consumers: 10, Items: 500},
		Rate: map[string]map[string]float64{
			cqSimple: {"zkrecipes": 250, "Curator": 125},
			cqPlain:  {"zkrecipes": 200, "Curator": 100},
			cqMixed:  {"zkrecipes": 190},
		},
		Requests: map[string]map[string]float64{
			cqSimple: {"zkrecipes": 4, "Curator": 4.5},
			cqPlain:  {"zkrecipes": 18, "Curator": 25.25},
			cqMixed:  {"zkrecipes": 18.5},
		},
	}
	got := r.Markdown()
	rows := []string{
		"| DistributedQueue: 10 consumers, 500 items | 200 | 100 | 0.50 | 18.00 | 25.25 |",
		"| DistributedQueue, Curator's items: 10 consumers, 500 items | 190 |  |  | 18.50 |  |",
		"| SimpleDistributedQueue: a producer and a consumer, 500 items | 250 | 125 | 0.50 | 4.00 | 4.50 |",
	}
	at := 0
	for _, row := range rows {
		i := strings.Index(got[at:], row+"\n")
		if i < 0 {
			t.Fatalf("no row %q after the previous ones in\n%s", row, got)
		}
		at += i + len(row)
	}
	if strings.Contains(got, "lock path") {
		t.Fatalf("a row not measured is shown:\n%s", got)
	}
}

// TestRunCuratorQueueSmoke runs the Curator queues' scenario once, small,
// with zkrecipes alone: every row but Curator's items (which needs
// Curator) has a rate and requests per item.
func TestRunCuratorQueueSmoke(t *testing.T) {
	skipSmokeHeavy(t)
	ens := shared.Ensemble(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, err := RunCuratorQueue(ctx, CuratorQueueConfig{Servers: ens.Servers(), Rounds: 1, Consumers: 3, Items: 20})
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range []string{cqPlain, cqLocked, cqSimple} {
		if r.Rate[row]["zkrecipes"] <= 0 || r.Requests[row]["zkrecipes"] <= 0 {
			t.Errorf("%s: %v items/s, %v requests/item", row, r.Rate[row]["zkrecipes"], r.Requests[row]["zkrecipes"])
		}
	}
	if _, ok := r.Rate[cqMixed]; ok {
		t.Errorf("Curator's items measured without Curator: %v", r.Rate[cqMixed])
	}
	if md := r.Markdown(); !strings.Contains(md, "| DistributedQueue, lock path: 3 consumers, 20 items |") {
		t.Fatalf("markdown:\n%s", md)
	}
}

// TestRunCuratorQueueRefusesNoWork: rounds, consumers and items must be
// positive, and there must be servers.
func TestRunCuratorQueueRefusesNoWork(t *testing.T) {
	for _, cfg := range []CuratorQueueConfig{
		{Servers: []string{"127.0.0.1:1"}, Rounds: 0, Consumers: 1, Items: 1},
		{Servers: []string{"127.0.0.1:1"}, Rounds: 1, Consumers: 0, Items: 1},
		{Servers: []string{"127.0.0.1:1"}, Rounds: 1, Consumers: 1, Items: 0},
		{Rounds: 1, Consumers: 1, Items: 1},
	} {
		if _, err := RunCuratorQueue(context.Background(), cfg); err == nil {
			t.Errorf("%+v accepted", cfg)
		}
	}
}
