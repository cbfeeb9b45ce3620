package zkserver

import (
	"errors"
	"net"
	"slices"
	"strconv"
	"testing"
)

// TestFixPorts: the client ports (every third of the first 3n) become
// first, first+1, ...; the other ports stay; a fixed port in use, or found
// free for another role, is ErrPortInUse.
func TestFixPorts(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	taken := l.Addr().(*net.TCPAddr).Port

	ports := []int{1, 2, 3, 4, 5, 6, 7, 8}
	first := freeRun(t, 2)
	if err := fixPorts(ports, first, 2); err != nil {
		t.Fatal(err)
	}
	if want := []int{first, 2, 3, first + 1, 5, 6, 7, 8}; !slices.Equal(ports, want) {
		t.Fatalf("ports %v, want %v", ports, want)
	}
	if err := fixPorts([]int{1, 2, 3, 4}, taken, 1); !errors.Is(err, ErrPortInUse) {
		t.Fatalf("a taken port: %v, want ErrPortInUse", err)
	}
	if err := fixPorts([]int{1, first, 3, 4}, first, 1); !errors.Is(err, ErrPortInUse) {
		t.Fatalf("a fixed port among the others: %v, want ErrPortInUse", err)
	}
}

// TestNewProxyOnTakenPort: a proxy asked to listen on a port in use fails
// with ErrPortInUse and leaves no listener behind.
func TestNewProxyOnTakenPort(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	free := freeRun(t, 1)
	addrs := []string{net.JoinHostPort("127.0.0.1", strconv.Itoa(free)), l.Addr().String()}
	if _, err := NewProxyOn(addrs, []string{"127.0.0.1:1", "127.0.0.1:2"}); !errors.Is(err, ErrPortInUse) {
		t.Fatalf("NewProxyOn on a taken port: %v, want ErrPortInUse", err)
	}
	again, err := net.Listen("tcp", addrs[0])
	if err != nil {
		t.Fatalf("the first address is still taken after the failed proxy: %v", err)
	}
	again.Close()
	p, err := NewProxyOn(addrs[:1], []string{"127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if got := p.Servers(); !slices.Equal(got, addrs[:1]) {
		t.Fatalf("Servers() %v, want %v", got, addrs[:1])
	}
}

// freeRun returns the first of n consecutive loopback ports that were free
// a moment ago.
func freeRun(t *testing.T, n int) int {
	t.Helper()
	for attempt := 0; attempt < 50; attempt++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		first := l.Addr().(*net.TCPAddr).Port
		l.Close()
		ok := true
		for i := 1; i < n && ok; i++ {
			if m, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(first+i))); err != nil {
				ok = false
			} else {
				m.Close()
			}
		}
		if ok {
			return first
		}
	}
	t.Fatalf("no %d consecutive free ports", n)
	return 0
}
