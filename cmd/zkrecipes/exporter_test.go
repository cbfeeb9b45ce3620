package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/testinfra/peertest"
	"github.com/zkrecipes/zkrecipes/recipes/election"
	"github.com/zkrecipes/zkrecipes/recipes/queue"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// startExporter runs zkrecipes exporter with args on a free port of the
// loopback and returns the address it serves on and its standard error;
// it is stopped when the test ends, and must end with status 0.
func startExporter(t *testing.T, args ...string) (string, *syncBuffer) {
	t.Helper()
	_, errOut, stop, _ := runBackground(t, append([]string{"exporter", "--listen", "127.0.0.1:0"}, args...)...)
	t.Cleanup(func() {
		if code := stop(); code != 0 {
			t.Errorf("exporter ended with status %d", code)
		}
	})
	served := regexp.MustCompile(`on http://([^/\s]+)/metrics`)
	var addr string
	zktest.Eventually(t, 30*time.Second, "the exporter to say where it serves", func() error {
		m := served.FindStringSubmatch(errOut.String())
		if m == nil {
			return fmt.Errorf("stderr: %q", errOut.String())
		}
		addr = m[1]
		return nil
	})
	return addr, errOut
}

// scrapeOnce reads /metrics as Prometheus does.
func scrapeOnce(addr string) (string, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		return "", fmt.Errorf("status %d, Content-Type %q", resp.StatusCode, ct)
	}
	return string(body), nil
}

// sampleOf is the value of the series (its name and labels as the
// exporter writes them: sorted) in a scrape.
func sampleOf(text, series string) (float64, bool) {
	for _, line := range strings.Split(text, "\n") {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			v, err := strconv.ParseFloat(rest, 64)
			return v, err == nil
		}
	}
	return 0, false
}

// want is a series' expected value in a scrape.
type want struct {
	series string
	value  float64
}

// waitScrape scrapes until every series has its value, and returns that
// scrape.
func waitScrape(t *testing.T, addr, what string, wants ...want) string {
	t.Helper()
	var text string
	zktest.Eventually(t, 30*time.Second, what, func() error {
		var err error
		if text, err = scrapeOnce(addr); err != nil {
			return err
		}
		for _, w := range wants {
			if v, ok := sampleOf(text, w.series); !ok || v != w.value {
				return fmt.Errorf("%s = %v (present %v), want %v\n%s", w.series, v, ok, w.value, text)
			}
		}
		return nil
	})
	return text
}

func mutexSeries(name, path, layout string, more ...string) string {
	labels := append([]string{`layout="` + layout + `"`, `path="` + path + `"`, `recipe="mutex"`}, more...)
	return name + "{" + strings.Join(labels, ",") + "}"
}

// TestExporterFollowsRecipesOfEveryLibrary: the recipes under a directory,
// a lock held by Curator and awaited by Go, a lock held by Kazoo, a Go
// election, a work queue and a counter told by its data, are served with
// their values, which follow what changes; a scrape reads nothing from
// ZooKeeper.
func TestExporterFollowsRecipesOfEveryLibrary(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	c := open(t, ens)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	lock := root + "/locks/orders"
	curator := peertest.Curator(t, ens.ConnectString(), lock, "mutex")
	curator.Do("ACQUIRED", "acquire")
	waitMutex(t, c, lock, "go-waiter")
	nodes(t, ens, lock, 2)
	kazooLock := root + "/locks/kazoo"
	kazoo := peertest.Kazoo(t, ens.ConnectString(), kazooLock)
	kazoo.Do("ACQUIRED", "acquire")

	e, err := election.New(c, root+"/leader", "go-leader")
	if err != nil {
		t.Fatal(err)
	}
	term, err := e.Campaign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	q, err := queue.New(c, root+"/jobs")
	if err != nil {
		t.Fatal(err)
	}
	for _, item := range []string{"a", "b", "c"} {
		if err := q.Put(ctx, []byte(item)); err != nil {
			t.Fatal(err)
		}
	}
	item, err := q.Take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	conn := ens.Conn(t)
	if _, err := conn.Create(root+"/hits", []byte("42"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}

	addr, _ := startExporter(t, "--servers", ens.ConnectString(), root)
	latch := fmt.Sprintf(`{layout="curator",path="%s/leader",recipe="leader-latch"}`, root)
	jobs := fmt.Sprintf(`{layout="kazoo",path="%s/jobs",recipe="queue"}`, root)
	text := waitScrape(t, addr, "the first view",
		want{"zkrecipes_exporter_up", 1},
		want{"zkrecipes_exporter_trusted", 1},
		want{mutexSeries("zkrecipes_lock_holders", lock, "curator"), 1},
		want{mutexSeries("zkrecipes_lock_waiters", lock, "curator"), 1},
		want{mutexSeries("zkrecipes_lock_holders", kazooLock, "kazoo"), 1},
		want{mutexSeries("zkrecipes_lock_waiters", kazooLock, "kazoo"), 0},
		want{"zkrecipes_election_term_token" + latch, float64(term.Token())},
		want{"zkrecipes_election_candidates" + latch, 0},
		want{fmt.Sprintf(`zkrecipes_election_leader_info{layout="curator",leader="go-leader",path="%s/leader",recipe="leader-latch",session="%#x",token="%d"}`, root, c.Session().ID(), term.Token()), 1},
		want{"zkrecipes_queue_depth" + jobs, 3},
		want{"zkrecipes_queue_taken" + jobs, 1},
		want{fmt.Sprintf(`zkrecipes_counter_value{encoding="text",layout="kazoo",path="%s/hits",recipe="counter"}`, root), 42},
		want{"zkrecipes_exporter_series_dropped", 0},
	)
	if !strings.Contains(text, "# TYPE zkrecipes_lock_holders gauge\n") || !strings.Contains(text, "# HELP zkrecipes_lock_waiters ") {
		t.Fatalf("no HELP or TYPE lines:\n%s", text)
	}
	if age, ok := sampleOf(text, mutexSeries("zkrecipes_lock_oldest_wait_seconds", lock, "curator")); !ok || age <= 0 || age > 120 {
		t.Fatalf("the oldest wait is %v s (present %v), want the Go waiter's age", age, ok)
	}
	if !regexp.MustCompile(`zkrecipes_lock_holder_info\{holder="[^"]*",layout="curator",path="` + regexp.QuoteMeta(lock) + `",recipe="mutex",session="0x[0-9a-f]+",token="\d+"\} 1`).MatchString(text) {
		t.Fatalf("no holder_info of Curator's holder:\n%s", text)
	}

	// Nothing changes: scrapes read nothing.
	reads, _ := sampleOf(text, "zkrecipes_exporter_reads_total")
	for range 3 {
		if text, err = scrapeOnce(addr); err != nil {
			t.Fatal(err)
		}
	}
	if again, _ := sampleOf(text, "zkrecipes_exporter_reads_total"); again != reads {
		t.Fatalf("scrapes of an unchanged tree read paths: reads %v, then %v", reads, again)
	}

	// Curator releases: the Go waiter holds, nobody waits; the queue's
	// item is consumed; the leader resigns.
	curator.Do("RELEASED", "release")
	if err := item.Consume(ctx); err != nil {
		t.Fatal(err)
	}
	if err := term.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	kazoo.Do("RELEASED", "release")
	text = waitScrape(t, addr, "the view after the changes",
		want{mutexSeries("zkrecipes_lock_holders", lock, "curator"), 1},
		want{mutexSeries("zkrecipes_lock_waiters", lock, "curator"), 0},
		want{mutexSeries("zkrecipes_lock_oldest_wait_seconds", lock, "curator"), 0},
		want{"zkrecipes_queue_depth" + jobs, 2},
		want{"zkrecipes_queue_taken" + jobs, 0},
	)
	if !strings.Contains(text, `zkrecipes_lock_holder_info{holder="go-waiter",layout="curator",path="`+lock+`"`) {
		t.Fatalf("the Go waiter does not hold:\n%s", text)
	}
	// Each change is followed on its own: the Kazoo lock's release and
	// the term's end may come after the changes above.
	zktest.Eventually(t, 30*time.Second, "no series of an election and a lock with no participant", func() error {
		text, err := scrapeOnce(addr)
		if err != nil {
			return err
		}
		if strings.Contains(text, "zkrecipes_election_") || strings.Contains(text, `path="`+kazooLock+`"`) {
			return fmt.Errorf("still there:\n%s", text)
		}
		return nil
	})
}

// TestExporterServesNoRecipeSeriesWhileCut: cut off from ZooKeeper, the
// exporter says it is neither up nor trusted and serves no recipe series;
// once back, it serves what changed meanwhile.
func TestExporterServesNoRecipeSeriesWhileCut(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	c := open(t, ens)
	lock := root + "/lock"
	m := lockMutex(t, c, lock, "first")
	proxy := ens.Proxy(t)
	addr, _ := startExporter(t, "--servers", strings.Join(proxy.Servers(), ","), "--session-timeout", "20s", lock)
	holders := mutexSeries("zkrecipes_lock_holders", lock, "curator")
	waitScrape(t, addr, "the lock held", want{"zkrecipes_exporter_trusted", 1}, want{holders, 1})

	proxy.Cut()
	text := waitScrape(t, addr, "the exporter cut off", want{"zkrecipes_exporter_up", 0}, want{"zkrecipes_exporter_trusted", 0}, want{"zkrecipes_exporter_series", 0})
	if strings.Contains(text, "zkrecipes_lock_") {
		t.Fatalf("recipe series served while cut off:\n%s", text)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	lockMutex(t, c, lock, "second")
	proxy.Restore()
	text = waitScrape(t, addr, "the exporter back", want{"zkrecipes_exporter_up", 1}, want{"zkrecipes_exporter_trusted", 1}, want{holders, 1})
	if !strings.Contains(text, `holder="second"`) || strings.Contains(text, `holder="first"`) {
		t.Fatalf("after the cut, the holder is not the new one:\n%s", text)
	}
}

// TestExporterBoundsItsSeries: past --max-series the series of the paths
// last in byte order are left out, counted, and said once in the log; so
// are the paths past --max-paths.
func TestExporterBoundsItsSeries(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	for _, p := range []string{"", "/a", "/b", "/c"} {
		data := []byte("7")
		if p == "" {
			data = nil
		}
		if _, err := conn.Create(root+p, data, 0, zk.WorldACL(zk.PermAll)); err != nil && p != "" {
			t.Fatal(err)
		}
	}
	// Each counter has two series: its value and its warnings.
	addr, errOut := startExporter(t, "--servers", ens.ConnectString(), "--max-series", "3", root)
	text := waitScrape(t, addr, "the bounded view",
		want{"zkrecipes_exporter_trusted", 1},
		want{"zkrecipes_exporter_series", 3},
		want{"zkrecipes_exporter_series_limit", 3},
		want{"zkrecipes_exporter_series_dropped", 3},
		want{fmt.Sprintf(`zkrecipes_counter_value{encoding="text",layout="kazoo",path="%s/a",recipe="counter"}`, root), 7},
		want{fmt.Sprintf(`zkrecipes_counter_value{encoding="text",layout="kazoo",path="%s/b",recipe="counter"}`, root), 7},
	)
	if strings.Contains(text, root+"/c") {
		t.Fatalf("a series past the limit is served:\n%s", text)
	}

	// Past --max-paths: the root and two of its three children.
	paths, pathsErr := startExporter(t, "--servers", ens.ConnectString(), "--max-paths", "3", root)
	waitScrape(t, paths, "the paths bounded",
		want{"zkrecipes_exporter_trusted", 1},
		want{"zkrecipes_exporter_paths", 3},
		want{"zkrecipes_exporter_paths_dropped", 1},
		want{"zkrecipes_exporter_series", 4},
	)
	if n := strings.Count(pathsErr.String(), "more than --max-paths 3"); n != 1 {
		t.Fatalf("the path limit said %d times in the log, want once:\n%s", n, pathsErr.String())
	}
	for range 2 {
		if _, err := scrapeOnce(addr); err != nil {
			t.Fatal(err)
		}
	}
	if n := strings.Count(errOut.String(), "past --max-series 3"); n != 1 {
		t.Fatalf("the limit said %d times in the log, want once:\n%s", n, errOut.String())
	}
}

// TestExporterReportsUnreadablePath: a path the exporter cannot read (a
// child it may not read, as inspect finds) is counted and logged; it
// holds neither the trust nor the other paths' series back.
func TestExporterReportsUnreadablePath(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	if _, err := conn.Create(root+"/team", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Create(root+"/team/hidden", nil, 0, zk.WorldACL(zk.PermCreate|zk.PermDelete)); err != nil {
		t.Fatal(err)
	}
	// Before the root is removed, which cannot list the hidden node, and
	// so that other tests' looks at / do not meet it.
	t.Cleanup(func() {
		if err := conn.Delete(root+"/team/hidden", -1); err != nil {
			t.Errorf("delete the unreadable node: %v", err)
		}
	})
	if _, err := conn.Create(root+"/hits", []byte("9"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	addr, errOut := startExporter(t, "--servers", ens.ConnectString(), root)
	waitScrape(t, addr, "the readable path served, the other counted",
		want{"zkrecipes_exporter_trusted", 1},
		want{"zkrecipes_exporter_path_errors", 1},
		want{fmt.Sprintf(`zkrecipes_counter_value{encoding="text",layout="kazoo",path="%s/hits",recipe="counter"}`, root), 9},
	)
	if !strings.Contains(errOut.String(), "read "+root+"/team: ") {
		t.Fatalf("the unreadable path is not in the log:\n%s", errOut.String())
	}
}

// TestExporterReadsAgainInNewSession: a session lost while cut off ends
// the trust; in the new session every path is read again, and the lock
// taken meanwhile is served.
func TestExporterReadsAgainInNewSession(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	c := open(t, ens)
	proxy := ens.Proxy(t)
	addr, errOut := startExporter(t, "--servers", strings.Join(proxy.Servers(), ","), "--session-timeout", "4s", root)
	waitScrape(t, addr, "the empty root", want{"zkrecipes_exporter_trusted", 1}, want{"zkrecipes_exporter_series", 0})

	proxy.Cut()
	zktest.Eventually(t, 30*time.Second, "the session lost", func() error {
		if !strings.Contains(errOut.String(), "LOST") {
			text, _ := scrapeOnce(addr)
			return fmt.Errorf("stderr: %s\n%s", errOut.String(), text)
		}
		return nil
	})
	lock := root + "/lock"
	lockMutex(t, c, lock, "taken-while-cut")
	proxy.Restore()
	text := waitScrape(t, addr, "the new session's view",
		want{"zkrecipes_exporter_trusted", 1},
		want{mutexSeries("zkrecipes_lock_holders", lock, "curator"), 1},
	)
	if !strings.Contains(text, `holder="taken-while-cut"`) {
		t.Fatalf("the lock taken while cut off is not served:\n%s", text)
	}
}
