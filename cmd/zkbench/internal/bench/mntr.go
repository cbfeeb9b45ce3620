package bench

import (
	"bufio"
	"strconv"
	"strings"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/zkserver"
)

// triggerMetrics are mntr's sums of the watchers each server triggered, by
// event type (ZooKeeper 3.6+): together, every watch notification sent.
var triggerMetrics = []string{
	"zk_sum_node_created_watch_count",
	"zk_sum_node_deleted_watch_count",
	"zk_sum_node_changed_watch_count",
	"zk_sum_node_children_watch_count",
}

// watchTriggers returns the watch notifications all servers have sent so
// far. Counting on the servers treats every client library alike.
func watchTriggers(servers []string) (int64, error) { return mntrSum(servers, triggerMetrics) }

// packetsReceived returns the packets (requests, pings included) all
// servers have received so far.
func packetsReceived(servers []string) (int64, error) {
	return mntrSum(servers, []string{"zk_packets_received"})
}

// mntrSum sums the metrics over the servers.
func mntrSum(servers []string, metrics []string) (int64, error) {
	var total int64
	for _, s := range servers {
		out, err := zkserver.FourLetter(s, "mntr", 2*time.Second)
		if err != nil {
			return 0, err
		}
		sc := bufio.NewScanner(strings.NewReader(out))
		for sc.Scan() {
			name, value, ok := strings.Cut(sc.Text(), "\t")
			if !ok {
				continue
			}
			for _, m := range metrics {
				if name == m {
					n, err := strconv.ParseInt(strings.TrimSpace(value), 10, 64)
					if err != nil {
						return 0, err
					}
					total += n
				}
			}
		}
	}
	return total, nil
}
