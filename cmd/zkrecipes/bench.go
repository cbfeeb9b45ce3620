package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/bench"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

func runBench(ctx context.Context, args []string, out, _ io.Writer) error {
	fs := newFlags("bench", "", out)
	servers := fs.String("servers", "", "ZooKeeper servers, host:port,... (default: ZK_SERVERS, else a local 3-node ensemble started for the run)")
	rounds := fs.Int("rounds", 3, "rounds; results are medians")
	duration := fs.Duration("duration", 3*time.Second, "length of each contended window")
	iterations := fs.Int("iterations", 300, "uncontended Lock+Unlock per round")
	parts := fs.String("participants", "2,10,100", "participant counts of the contended runs")
	impls := fs.String("impls", "mutex,naive,zk.Lock,raw floor", "implementations to compare")
	output := fs.String("o", "", "also write the markdown report to this file")
	if err := parse(fs, args); err != nil {
		return err
	}
	var counts []int
	for _, s := range strings.Split(*parts, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return fmt.Errorf("--participants: %q is not a positive count", s)
		}
		counts = append(counts, n)
	}
	chosen, err := bench.ByName(strings.Split(*impls, ",")...)
	if err != nil {
		return err
	}
	list := serverList(*servers)
	ensemble := "the ensemble at " + strings.Join(list, ",")
	if len(list) == 0 {
		fmt.Fprintln(out, "No servers given: starting a local 3-node ZooKeeper ensemble...")
		ens, err := zktest.New(zktest.WithServers(3))
		if err != nil {
			return err
		}
		defer ens.Close()
		list = ens.Servers()
		ensemble = "a local 3-node ZooKeeper ensemble (zktest, Debian's zookeeper 3.8.0, tickTime 100 ms, forceSync=no)"
	}
	start := time.Now()
	res, err := bench.Run(ctx, bench.Config{
		Servers: list, Impls: chosen, Participants: counts, Duration: *duration,
		Iterations: *iterations, Rounds: *rounds, Progress: out,
	})
	if err != nil {
		return err
	}
	report := fmt.Sprintf("Measured %s on %s: %s, %d CPUs, %s. Each participant has its own session.\n\n%s",
		time.Now().UTC().Format("2006-01-02"), ensemble, runtime.GOOS+"/"+runtime.GOARCH, runtime.NumCPU(), runtime.Version(), res.Markdown("mutex"))
	fmt.Fprintf(out, "\n%s\n(%v in all)\n", report, time.Since(start).Round(time.Second))
	if *output != "" {
		return os.WriteFile(*output, []byte(report), 0o644)
	}
	return nil
}
