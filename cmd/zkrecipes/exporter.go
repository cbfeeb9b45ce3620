package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/promtext"
)

const exporterAbout = `Serves the state of every recipe under the PATHs as Prometheus metrics,
on http://ADDR/metrics (--listen), until interrupted: holders and waiters
of each lock (mutex, read/write lock by side, naive lock; Go, Curator or
Kazoo layouts, as inspect reads them), the oldest wait, semaphore leases,
each leader latch's leader and term token, queue depth and items taken,
partition owners, group members, service instances, counter values,
double barriers. docs/exporter.md lists the metrics and their labels.

A PATH that holds no recipe is a directory: its children are followed,
down to --depth levels. Every path is watched, not polled: a path is read
again when one of its watches fires, and a scrape sends nothing to
ZooKeeper. While the session is suspended or lost, and until every path
has been read again after it comes back, the scrape serves no recipe
series and zkrecipes_exporter_trusted is 0.

At most --max-series recipe series are served (those of the paths first
in byte order) and --max-paths paths followed; past either, the rest are
left out, said once in the log (standard error) and counted in
zkrecipes_exporter_series_dropped or zkrecipes_exporter_paths_dropped.

A semaphore's maximum is not stored with it: --count SEMAPHORE=NODE
names the shared count node of one (repeat the flag for more), and
zkrecipes_semaphore_max is served for it.`

// Defaults of the exporter's flags.
const (
	defaultExporterListen = "localhost:9798"
	defaultMaxSeries      = 100000
	defaultMaxPaths       = 20000
)

// countFlags is --count SEMAPHORE=NODE, repeatable.
type countFlags map[string]string

func (c countFlags) String() string { return "" }

func (c countFlags) Set(s string) error {
	sem, node, ok := strings.Cut(s, "=")
	if !ok {
		return fmt.Errorf("want SEMAPHORE=NODE, got %q", s)
	}
	for _, p := range []string{sem, node} {
		if err := connection.ValidatePath(p); err != nil {
			return errors.New(strings.TrimPrefix(err.Error(), "connection: "))
		}
	}
	c[sem] = node
	return nil
}

func runExporter(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := newFlags("exporter", "PATH...", out, exporterAbout)
	cf := commonFlagsFor(ctx, fs, connFlags)
	listen := fs.String("listen", defaultExporterListen, "the address to serve /metrics on (host:port; port 0 picks a free one)")
	depth := fs.Int("depth", 3, "how many levels below a PATH that holds no recipe to follow")
	maxSeries := fs.Int("max-series", defaultMaxSeries, "the most recipe series to serve")
	maxPaths := fs.Int("max-paths", defaultMaxPaths, "the most paths to follow")
	counts := countFlags{}
	fs.Var(counts, "count", "SEMAPHORE=NODE: the shared count node holding a semaphore's maximum (repeatable)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usagef(fs, "want one PATH or more")
	}
	switch {
	case *depth < 0:
		return usagef(fs, "--depth %d: give 0 or more levels", *depth)
	case *maxSeries < 1:
		return usagef(fs, "--max-series %d: give 1 or more", *maxSeries)
	case *maxPaths < 1:
		return usagef(fs, "--max-paths %d: give 1 or more", *maxPaths)
	}
	for _, p := range fs.Args()[1:] {
		if err := connection.ValidatePath(p); err != nil {
			return usagef(fs, "%s", strings.TrimPrefix(err.Error(), "connection: "))
		}
	}
	if _, err := cf.connString(); err != nil {
		return usagef(fs, "%v", err)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return usagef(fs, "--listen %s: %v", *listen, err)
	}
	defer ln.Close()
	client, err := cf.openFor(ctx, fs, fs.Arg(0), nil)
	if err != nil {
		return err
	}
	defer client.Close()
	e := newExporter(client, fs.Args(), *depth, *maxSeries, *maxPaths, counts, errOut)
	return serveExporter(ctx, e, ln)
}

// serveExporter follows e's paths and serves its metrics on ln until ctx
// ends (which is no error), then stops all it started.
func serveExporter(ctx context.Context, e *exporter, ln net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	srv := &http.Server{Handler: exporterHandler(e), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		e.run(ctx, listWorkers)
	}()
	e.log.printf("serving the recipes under %s on http://%s/metrics", strings.Join(e.roots, ", "), ln.Addr())
	var err error
	select {
	case <-ctx.Done():
	case err = <-served:
	}
	shutCtx, stop := context.WithTimeout(context.Background(), 5*time.Second)
	defer stop()
	_ = srv.Shutdown(shutCtx)
	cancel()
	<-ran
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// exporterHandler serves /metrics, and a line saying so at /.
func exporterHandler(e *exporter) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		text, err := e.render(start)
		if err != nil {
			e.log.printf("scrape: %v", err)
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", promtext.ContentType)
		_, _ = w.Write(text)
		e.scraped(start, len(text))
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintln(w, "zkrecipes exporter: the metrics are at /metrics")
	})
	return mux
}
