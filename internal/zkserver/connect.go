package zkserver

import (
	"fmt"
	"io"
	"log"
	"time"

	"github.com/go-zookeeper/zk"
)

// Connect opens a plain go-zookeeper session to servers, with its logging
// silenced, and waits until the session exists (at most 10 s).
func Connect(servers []string, sessionTimeout time.Duration, opts ...func(*zk.Conn)) (*zk.Conn, error) {
	conn, events, err := zk.Connect(servers, sessionTimeout, connOptions(zk.WithLogInfo(false), zk.WithLogger(quietLogger), opts)...)
	if err != nil {
		return nil, err
	}
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				return conn, nil
			}
		case <-timeout:
			conn.Close()
			return nil, fmt.Errorf("zktest: no session with %v after 10s", servers)
		}
	}
}

var quietLogger = log.New(io.Discard, "", 0)

// connOptions builds a slice of go-zookeeper's unexported option type from
// plain functions, so that callers can pass options such as
// zk.WithEventCallback through Connect.
func connOptions[T ~func(*zk.Conn)](a, b T, rest []func(*zk.Conn)) []T {
	out := []T{a, b}
	for _, f := range rest {
		out = append(out, T(f))
	}
	return out
}
