package testkit

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

var goroutineMarks atomic.Int64

// OwnGoroutines labels the calling goroutine, so that every goroutine it
// starts from now on carries the label, and every goroutine those start;
// the function returned counts the live goroutines carrying it, the
// caller excepted. Unlike runtime.NumGoroutine, the count is of what the
// test started, whatever other tests run beside it.
func OwnGoroutines(t testing.TB) func() int {
	t.Helper()
	mark := "g" + strconv.FormatInt(goroutineMarks.Add(1), 10)
	pprof.SetGoroutineLabels(pprof.WithLabels(context.Background(), pprof.Labels("testkit", mark)))
	want := fmt.Sprintf("%q:%q", "testkit", mark)
	return func() int {
		var buf bytes.Buffer
		if err := pprof.Lookup("goroutine").WriteTo(&buf, 1); err != nil {
			t.Fatalf("goroutine profile: %v", err)
		}
		// Records are separated by blank lines: "N @ pcs", then
		// "# labels: {…}" when the goroutines carry labels, then frames.
		n, count := 0, 0
		sc := bufio.NewScanner(&buf)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if head, _, ok := strings.Cut(line, " @ "); ok {
				count, _ = strconv.Atoi(head)
				continue
			}
			if labels, ok := strings.CutPrefix(line, "# labels: "); ok && strings.Contains(labels, want) {
				n += count
			}
		}
		return n - 1
	}
}
