// Command zkchaos is make chaos: it starts a local 3-node ensemble, runs
// participants of every recipe held exclusively against it — several to a
// process, sharing its client — while a nemesis injects faults (package
// internal/testinfra/chaos), prints the tables and writes the plot. It
// exits 1 when a promise was broken.
//
//	go run ./internal/testinfra/chaos/zkchaos -duration 15m -svg docs/chaos.svg -md docs/chaos-run.md
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/testinfra/chaos"
	"github.com/zkrecipes/zkrecipes/internal/zkserver"
)

func main() {
	chaos.MaybeParticipant()
	duration := flag.Duration("duration", time.Minute, "how long the nemesis injects faults")
	participants := flag.Int("participants", 5, "participants per recipe (2–4 to a process, sharing its client)")
	session := flag.Duration("session", 2*time.Second, "session timeout of every participant")
	seed := flag.Uint64("seed", 0, "seed of the nemesis and the participants (0: from the clock)")
	recipes := flag.String("recipes", "", "comma-separated recipes (default: all of "+strings.Join(chaos.RecipeNames(), ",")+")")
	faults := flag.String("faults", "", "comma-separated fault kinds (default: all of "+strings.Join(chaos.FaultKinds, ",")+")")
	svg := flag.String("svg", "", "write the plot here")
	md := flag.String("md", "", "write the tables here, in Markdown")
	verbose := flag.Bool("v", false, "log every fault")
	flag.Parse()
	if err := run(*duration, *participants, *session, *seed, split(*recipes), split(*faults), *svg, *md, *verbose); err != nil {
		fmt.Fprintln(os.Stderr, "zkchaos:", err)
		os.Exit(1)
	}
}

func split(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func run(d time.Duration, participants int, session time.Duration, seed uint64, recipes, faults []string, svg, md string, verbose bool) error {
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	const syncLimit = 400 * time.Millisecond
	fmt.Printf("starting a 3-node ensemble (syncLimit %v)\n", syncLimit)
	ens, err := zkserver.New(zkserver.WithServers(3), zkserver.WithSyncLimit(syncLimit), zkserver.WithServerPartitions())
	if err != nil {
		return err
	}
	defer ens.Close()
	logf := func(format string, args ...any) {
		if verbose || !strings.HasPrefix(format, "nemesis: ") {
			fmt.Printf(time.Now().Format("15:04:05 ")+format+"\n", args...)
		}
	}
	fmt.Printf("running %v of faults, seed %d\n", d, seed)
	res, err := chaos.Run(ctx, chaos.Config{
		Ensemble: ens, Exe: exe, Root: "/chaos", Recipes: recipes, Faults: faults,
		Participants: participants, Duration: d, SessionTimeout: session,
		ServerLag: syncLimit + zkserver.DefaultTickTime, Seed: seed, Logf: logf,
	})
	if err != nil {
		return err
	}
	table := res.Table()
	fmt.Println()
	fmt.Println(table)
	if md != "" {
		if err := os.WriteFile(md, []byte(table), 0o644); err != nil {
			return err
		}
	}
	if svg != "" {
		var b bytes.Buffer
		if err := res.WriteSVG(&b); err != nil {
			return err
		}
		if err := os.WriteFile(svg, b.Bytes(), 0o644); err != nil {
			return err
		}
		fmt.Println("plot written to", svg)
	}
	for _, d := range res.Clients.Details {
		fmt.Println(d)
	}
	for _, r := range res.Recipes {
		for _, d := range r.Details {
			fmt.Println(r.Recipe + ": " + d)
		}
	}
	if v := res.Violations(); len(v) > 0 {
		return fmt.Errorf("broken promises:\n%s", strings.Join(v, "\n"))
	}
	fmt.Println("no promise broken")
	return nil
}
