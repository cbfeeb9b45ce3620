package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/promtext"
)

// retryPause is how long a path whose reading failed waits before it is
// read again (a connection that comes back reads every path at once).
const retryPause = 5 * time.Second

// exporter keeps the recipes under its roots current and renders them.
//
// Each path it follows is a unit: a root, or a directory's child down to
// depth levels. A unit is read as inspect reads a path (look, in full),
// with a watch on each directory read, and read again only when one of
// its own watches fires: a change to one lock re-reads that lock, not the
// tree. The watches are the client's shared ones and a fired watch only
// queues its unit (Watch.AfterFunc), so the cost while nothing changes is
// no goroutine and no request; a fixed pool of workers does the reads. A
// scrape renders what was last read and sends nothing to ZooKeeper.
//
// Trust: the view is trusted while the session is connected and every
// unit has been read since the last (re)connection. A connection that
// comes back, in the same session or a new one, reads every unit again;
// until then, and while suspended or lost, the scrape serves no recipe
// series (only the exporter's own, with zkrecipes_exporter_trusted 0), so
// that a value from before the cut is never taken for a current one.
type exporter struct {
	client    *connection.Client
	roots     []string
	depth     int
	counts    map[string]string // a semaphore's path: its shared count node
	maxSeries int
	maxPaths  int
	log       *lineLog

	mu           sync.Mutex
	units        map[string]*unit
	connected    bool
	epoch        int // counts (re)connections
	stale        int // units not read since the epoch began
	errs         int // units whose last reading failed
	pathsDropped int
	reads        uint64
	overLimit    bool          // the last scrape left series out
	lastScrape   time.Duration // how long the last scrape took
	lastBytes    int           // and its size
	closed       bool

	qmu   sync.Mutex // the queue; a watch's hook takes only this lock
	queue []*unit
	wake  chan struct{} // capacity 1
}

// unit is one path the exporter follows.
type unit struct {
	path   string
	depth  int   // levels below its root
	parent *unit // nil for a root

	// Guarded by exporter.mu.
	stops       []func() bool // the hooks on its watches
	series      []series
	dropped     int // its series past maxSeries
	kids        []string
	kidsDropped int
	err         error
	readEpoch   int
	retry       *time.Timer

	// Guarded by exporter.qmu.
	queued, reading, again, removed bool
}

// lineLog writes whole lines from several goroutines.
type lineLog struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineLog) printf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, "zkrecipes exporter: "+format+"\n", args...)
}

func newExporter(client *connection.Client, roots []string, depth, maxSeries, maxPaths int, counts map[string]string, log io.Writer) *exporter {
	roots = slices.Clone(roots)
	slices.Sort(roots)
	roots = slices.Compact(roots)
	return &exporter{
		client: client, roots: roots, depth: depth, counts: counts,
		maxSeries: maxSeries, maxPaths: maxPaths, log: &lineLog{w: log},
		units: map[string]*unit{}, wake: make(chan struct{}, 1),
	}
}

// run follows the roots until ctx ends, with workers reading what
// changed. It returns when all it started has ended.
func (e *exporter) run(ctx context.Context, workers int) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	states := e.client.Listen(ctx)
	e.mu.Lock()
	e.connected = e.client.State().IsConnected()
	for _, r := range e.roots {
		e.addUnit(r, 0, nil)
	}
	e.mu.Unlock()
	var wg sync.WaitGroup
	wg.Add(workers)
	for range workers {
		go func() {
			defer wg.Done()
			for u := e.next(ctx); u != nil; u = e.next(ctx) {
				e.read(ctx, u)
			}
		}()
	}
	for s := range states {
		e.stateChanged(s)
	}
	cancel() // the client closed: stop the workers too
	wg.Wait()
	e.mu.Lock()
	defer e.mu.Unlock()
	e.closed = true
	for _, u := range e.units {
		e.stopUnit(u)
	}
}

// stateChanged follows the session: a cut ends the trust, and a
// connection that comes back reads every unit again before it returns.
func (e *exporter) stateChanged(s connection.State) {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch s {
	case connection.Suspended:
		e.log.printf("SUSPENDED: the view is not trusted until every path is read again")
		e.connected = false
	case connection.Lost:
		e.log.printf("LOST: the session ended; every path is read again in the next one")
		e.connected = false
	case connection.Connected, connection.Reconnected:
		if s == connection.Reconnected {
			e.log.printf("RECONNECTED: reading %d path(s) again", len(e.units))
		}
		e.connected = true
		e.epoch++
		e.stale = len(e.units)
		for _, u := range e.units {
			e.markDirty(u)
		}
	}
}

// markDirty queues u to be read. It takes only qmu: a watch's AfterFunc
// calls it, on a goroutine of its own, whatever the exporter holds.
func (e *exporter) markDirty(u *unit) {
	e.qmu.Lock()
	defer e.qmu.Unlock()
	switch {
	case u.removed, u.queued:
	case u.reading:
		u.again = true
	default:
		u.queued = true
		e.queue = append(e.queue, u)
		select {
		case e.wake <- struct{}{}:
		default:
		}
	}
}

// next takes a unit to read, waiting for one; nil once ctx ends.
func (e *exporter) next(ctx context.Context) *unit {
	for {
		e.qmu.Lock()
		if len(e.queue) > 0 {
			u := e.queue[0]
			e.queue[0] = nil
			e.queue = e.queue[1:]
			u.queued, u.reading = false, true
			if len(e.queue) > 0 {
				select {
				case e.wake <- struct{}{}: // for another worker
				default:
				}
			}
			e.qmu.Unlock()
			return u
		}
		e.qmu.Unlock()
		select {
		case <-e.wake:
		case <-ctx.Done():
			return nil
		}
	}
}

// read reads u as inspect does, watching what it read, and keeps its
// series; a directory's children become units of their own.
func (e *exporter) read(ctx context.Context, u *unit) {
	e.mu.Lock()
	epoch, countPath := e.epoch, e.counts[u.path]
	e.mu.Unlock()
	r := &reader{client: e.client, watch: true}
	v, kids, err := look(ctx, r, u.path, lookOptions{countPath: countPath})
	// Funcs before the lock: a watch that fired already calls markDirty
	// at once, whether the unit is still reading (again) or not (queued).
	stops := make([]func() bool, 0, len(r.watches))
	for _, w := range r.watches {
		stops = append(stops, w.AfterFunc(func(zk.Event) { e.markDirty(u) }))
	}
	var ss []series
	if err == nil {
		ss = seriesOf(v)
	}

	e.mu.Lock()
	defer e.mu.Unlock()
	e.qmu.Lock()
	removed := u.removed
	u.reading = false
	again := u.again
	u.again = false
	e.qmu.Unlock()
	for _, stop := range u.stops {
		stop()
	}
	u.stops = stops
	if removed || e.closed {
		e.stopUnit(u)
		return
	}
	if again {
		e.markDirty(u)
	}
	e.reads++
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		cut := connectionError(err)
		if cut && (!e.connected || epoch != e.epoch) {
			return // the connection that comes back reads every unit again
		}
		if u.retry != nil {
			u.retry.Stop()
		}
		u.retry = time.AfterFunc(retryPause, func() { e.markDirty(u) })
		if cut {
			return // not the path's fault, and not read: the trust waits
		}
		// A failure that is the path's own does not hold the trust back:
		// the path is read, with no series, and the error is in the log
		// and in a metric.
		if u.err == nil {
			e.errs++
		}
		if u.err == nil || u.err.Error() != err.Error() {
			e.log.printf("read %s: %v (read again in %v)", u.path, err, retryPause)
		}
		u.err = err
		u.series, u.dropped = nil, 0
		e.readIn(u, epoch)
		return
	}
	if u.err != nil {
		e.errs--
		e.log.printf("read %s: read again, with no error", u.path)
		u.err = nil
	}
	if len(ss) > e.maxSeries {
		u.series, u.dropped = ss[:e.maxSeries], len(ss)-e.maxSeries
	} else {
		u.series, u.dropped = ss, 0
	}
	var next []string
	if v.Kind == kindDirectory && u.depth < e.depth {
		next = kids
	}
	e.setKids(u, next)
	e.readIn(u, epoch)
}

// readIn notes that u was read in epoch.
func (e *exporter) readIn(u *unit, epoch int) {
	if epoch == e.epoch && u.readEpoch != epoch {
		u.readEpoch = epoch
		e.stale--
	}
}

// setKids makes u's children units, and removes those it had that are
// gone. Past maxPaths units, children are left out and counted.
func (e *exporter) setKids(u *unit, kids []string) {
	listed := make(map[string]bool, len(kids))
	for _, k := range kids {
		listed[k] = true
	}
	for _, k := range u.kids {
		if c := e.units[k]; c != nil && c.parent == u && !listed[k] {
			e.removeUnit(c)
		}
	}
	e.pathsDropped -= u.kidsDropped
	u.kids, u.kidsDropped = u.kids[:0], 0
	for _, k := range kids {
		if _, ok := e.units[k]; !ok {
			if len(e.units) >= e.maxPaths {
				u.kidsDropped++
				continue
			}
			e.addUnit(k, u.depth+1, u)
		}
		u.kids = append(u.kids, k)
	}
	if u.kidsDropped > 0 && e.pathsDropped == 0 {
		e.log.printf("more than --max-paths %d paths under %s: %d left out; raise --max-paths or follow fewer paths", e.maxPaths, u.path, u.kidsDropped)
	}
	e.pathsDropped += u.kidsDropped
}

func (e *exporter) addUnit(p string, depth int, parent *unit) {
	u := &unit{path: p, depth: depth, parent: parent, readEpoch: -1}
	e.units[p] = u
	e.stale++
	e.markDirty(u)
}

// removeUnit forgets u and the units below it that it made.
func (e *exporter) removeUnit(u *unit) {
	for _, k := range u.kids {
		if c := e.units[k]; c != nil && c.parent == u {
			e.removeUnit(c)
		}
	}
	delete(e.units, u.path)
	if u.readEpoch != e.epoch {
		e.stale--
	}
	if u.err != nil {
		e.errs--
	}
	e.pathsDropped -= u.kidsDropped
	e.stopUnit(u)
}

// stopUnit unregisters u's hooks and its retry, so that nothing queues
// it again.
func (e *exporter) stopUnit(u *unit) {
	e.qmu.Lock()
	u.removed = true
	e.qmu.Unlock()
	for _, stop := range u.stops {
		stop()
	}
	u.stops = nil
	if u.retry != nil {
		u.retry.Stop()
	}
}

// scrape writes the metrics as of now to w (render).
func (e *exporter) scrape(w io.Writer) error {
	start := time.Now()
	text, err := e.render(start)
	if err == nil {
		_, err = w.Write(text)
	}
	e.scraped(start, len(text))
	return err
}

// scraped notes a scrape begun at start that wrote n bytes.
func (e *exporter) scraped(start time.Time, n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.lastScrape, e.lastBytes = time.Since(start), n
}

// render renders the metrics as of start: the recipe series while the
// view is trusted, at most maxSeries of them (those of the paths first in
// byte order), and the exporter's own.
func (e *exporter) render(start time.Time) ([]byte, error) {
	e.mu.Lock()
	trusted := e.connected && e.stale == 0
	var samples []promtext.Sample
	total := 0
	if trusted {
		paths := make([]string, 0, len(e.units))
		for p := range e.units {
			paths = append(paths, p)
		}
		slices.Sort(paths)
		samples = make([]promtext.Sample, 0, min(e.maxSeries, 4*len(paths)))
		for _, p := range paths {
			u := e.units[p]
			total += len(u.series) + u.dropped
			for _, s := range u.series {
				if len(samples) == e.maxSeries {
					break
				}
				samples = append(samples, s.at(start))
			}
		}
	}
	series, dropped := len(samples), total-len(samples)
	if dropped > 0 && !e.overLimit {
		e.log.printf("%d recipe series past --max-series %d are left out (those of the paths last in byte order); raise --max-series or follow fewer paths", dropped, e.maxSeries)
	}
	e.overLimit = dropped > 0
	gauge := func(name string, v float64) {
		samples = append(samples, promtext.Sample{Name: name, Value: v})
	}
	gauge("zkrecipes_exporter_up", b2f(e.connected))
	gauge("zkrecipes_exporter_trusted", b2f(trusted))
	gauge("zkrecipes_exporter_paths", float64(len(e.units)))
	gauge("zkrecipes_exporter_paths_dropped", float64(e.pathsDropped))
	gauge("zkrecipes_exporter_path_errors", float64(e.errs))
	gauge("zkrecipes_exporter_reads_total", float64(e.reads))
	gauge("zkrecipes_exporter_series", float64(series))
	gauge("zkrecipes_exporter_series_limit", float64(e.maxSeries))
	gauge("zkrecipes_exporter_series_dropped", float64(dropped))
	gauge("zkrecipes_exporter_last_scrape_duration_seconds", e.lastScrape.Seconds())
	size := e.lastBytes
	e.mu.Unlock()

	var buf bytes.Buffer
	buf.Grow(size + size/8)
	if err := promtext.Write(&buf, exporterFamilies, samples); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// connectionError reports whether err is the connection's or the
// session's, not a path's.
func connectionError(err error) bool {
	for _, target := range []error{zk.ErrConnectionClosed, zk.ErrSessionExpired, zk.ErrSessionMoved, zk.ErrClosing,
		connection.ErrSessionLost, connection.ErrSuspended, connection.ErrClosed, connection.ErrNewHistory} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
