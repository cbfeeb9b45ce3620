package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/testinfra/peertest"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// prometheusBinary is the prometheus server's binary; without one the
// test is skipped.
func prometheusBinary(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("no prometheus binary on PATH: install Debian's prometheus package (scripts/install-deps.sh test does) to run this test")
	}
	return bin
}

// startPrometheus starts the Prometheus server bin, scraping target every
// 500ms, with its storage in a temporary directory, and returns its
// address; it is killed when the test ends.
func startPrometheus(t *testing.T, bin, target string) string {
	t.Helper()
	dir := t.TempDir()
	config := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(config, []byte(fmt.Sprintf(`global:
  scrape_interval: 500ms
  scrape_timeout: 400ms
scrape_configs:
  - job_name: zkrecipes
    static_configs:
      - targets: [%q]
`, target)), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var log syncBuffer
	cmd := exec.Command(bin, "--config.file="+config, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("prometheus:\n%s", log.String())
		}
	})
	return addr
}

// promQuery is one instant query's answer: the vector's values by series.
func promQuery(addr, query string) ([]float64, error) {
	resp, err := http.Get("http://" + addr + "/api/v1/query?query=" + url.QueryEscape(query))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var answer struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
		return nil, err
	}
	if answer.Status != "success" {
		return nil, fmt.Errorf("query %s: %s", query, answer.Error)
	}
	var out []float64
	for _, r := range answer.Data.Result {
		s, _ := r.Value[1].(string)
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// waitQuery queries Prometheus until the query gives exactly want.
func waitQuery(t *testing.T, addr, query string, want float64) {
	t.Helper()
	zktest.Eventually(t, 60*time.Second, query+" in Prometheus", func() error {
		vs, err := promQuery(addr, query)
		if err != nil {
			return err
		}
		if len(vs) != 1 || vs[0] != want {
			return fmt.Errorf("%s = %v, want [%v]", query, vs, want)
		}
		return nil
	})
}

// TestPrometheusScrapesLockTakenByCurator: a real Prometheus server
// scraping the exporter stores the holders and waiters of a lock that a
// Curator peer takes, and sees the change when it releases it.
func TestPrometheusScrapesLockTakenByCurator(t *testing.T) {
	bin := prometheusBinary(t)
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	lock := root + "/locks/nightly"
	holder := peertest.Curator(t, ens.ConnectString(), lock, "mutex")
	holder.Do("ACQUIRED", "acquire")
	waiter := peertest.Curator(t, ens.ConnectString(), lock, "mutex")
	waiter.Send("acquire")
	nodes(t, ens, lock, 2)

	exporter, _ := startExporter(t, "--servers", ens.ConnectString(), root)
	prom := startPrometheus(t, bin, exporter)
	sel := fmt.Sprintf(`{job="zkrecipes",path=%q,recipe="mutex",layout="curator"}`, lock)
	waitQuery(t, prom, `up{job="zkrecipes"}`, 1)
	waitQuery(t, prom, `zkrecipes_exporter_trusted{job="zkrecipes"}`, 1)
	waitQuery(t, prom, "zkrecipes_lock_holders"+sel, 1)
	waitQuery(t, prom, "zkrecipes_lock_waiters"+sel, 1)

	holder.Do("RELEASED", "release")
	waiter.Expect("ACQUIRED", 30*time.Second)
	waitQuery(t, prom, "zkrecipes_lock_waiters"+sel, 0)
	waitQuery(t, prom, "zkrecipes_lock_holders"+sel, 1)
	waitQuery(t, prom, "count(zkrecipes_lock_holder_info"+sel+")", 1)
}
