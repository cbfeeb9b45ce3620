package bench

// The Java heap a local ZooKeeper server uses: what its watches cost it.

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
)

// serverHeap returns the Java heap in use, in bytes, of the local
// ZooKeeper server that listens at addr — a child of this process — after
// a full collection: jcmd's GC.run, then the generations' "used" of
// GC.heap_info. ok is false where there is no such server (an external
// ensemble) or no jcmd.
func serverHeap(addr string) (heap int64, ok bool) {
	pid, ok := serverPid(addr)
	if !ok {
		return 0, false
	}
	jcmd, err := exec.LookPath("jcmd")
	if err != nil {
		return 0, false
	}
	if err := exec.Command(jcmd, strconv.Itoa(pid), "GC.run").Run(); err != nil {
		return 0, false
	}
	out, err := exec.Command(jcmd, strconv.Itoa(pid), "GC.heap_info").Output()
	if err != nil {
		return 0, false
	}
	return parseHeapInfo(string(out))
}

// generationUsed matches a generation's line of GC.heap_info (the serial
// collector's "def new generation" and "tenured generation", G1's
// "garbage-first heap"): its "used" in KiB.
var generationUsed = regexp.MustCompile(`^\s*(?:\S+ )*(?:generation|heap)\s+total \d+K, used (\d+)K`)

// parseHeapInfo sums the "used" of the heap's generations in jcmd's
// GC.heap_info output (Metaspace, not the heap, left out).
func parseHeapInfo(out string) (int64, bool) {
	var used int64
	found := false
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		m := generationUsed.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		k, err := strconv.ParseInt(m[1], 10, 64)
		if err != nil {
			return 0, false
		}
		used, found = used+k*1024, true
	}
	return used, found
}

// serverPid finds the local server listening at addr among this
// process's children: a QuorumPeerMain whose configuration file (its
// last argument) has addr's port as clientPort.
func serverPid(addr string) (int, bool) {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return 0, false
	}
	for pid, args := range localServers() {
		cfg, err := os.ReadFile(args[len(args)-1])
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(cfg), "\n") {
			if strings.TrimSpace(line) == "clientPort="+port {
				return pid, true
			}
		}
	}
	return 0, false
}
