package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"net"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
)

// openFor checks a command's servers, PATH and CMD (if any), in that
// order, and opens its client: a usage error for the first two, 127 or
// 126 for CMD, 5 when no session can be had. Nothing is sent to ZooKeeper
// before all of them are known to be right.
func (cf *commonFlags) openFor(ctx context.Context, fs *flag.FlagSet, path string, cmdArgs []string) (*connection.Client, error) {
	cs, err := cf.connString()
	if err != nil {
		return nil, usagef(fs, "%v", err)
	}
	if err := connection.ValidatePath(path); err != nil {
		return nil, usagef(fs, "%s", strings.TrimPrefix(err.Error(), "connection: "))
	}
	if len(cmdArgs) > 0 {
		if err := checkCommand(cmdArgs[0]); err != nil {
			return nil, err
		}
	}
	return cf.open(ctx, cs)
}

// open opens a client on cs with the common flags' settings and the
// environment's credentials.
func (cf *commonFlags) open(ctx context.Context, cs connString) (*connection.Client, error) {
	opts := []connection.Option{connection.WithSessionTimeout(cf.sessionTimeout), connection.WithErrorPolicy(cf.policy)}
	if cs.chroot != "" {
		opts = append(opts, connection.WithNamespace(cs.chroot))
	}
	opts, err := openOptions(opts...)
	if err != nil {
		return nil, err
	}
	return openQuickly(ctx, cs.servers, cf.connectTimeout, opts)
}

// checkCommand finds the program CMD names, as a shell would before
// running it: 127 if there is none, 126 if it cannot be run.
func checkCommand(name string) error {
	_, err := exec.LookPath(name)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, exec.ErrNotFound), errors.Is(err, fs.ErrNotExist):
		return &exitError{exitNotFound, fmt.Sprintf("%s: command not found", name)}
	case errors.Is(err, fs.ErrPermission):
		return &exitError{exitCannotRun, fmt.Sprintf("%s: permission denied (not an executable file)", name)}
	}
	return &exitError{exitCannotRun, fmt.Sprintf("cannot run %s: %v", name, err)}
}

// connection.Open retries every server until its context ends, whatever
// the reason a server cannot be reached. When none is listening — a
// wrong port, ZooKeeper down — that would mean waiting the whole
// --connect-timeout for an answer the first connect already gave. So if
// no session has come after probeAfter (a healthy ensemble answers well
// before), each server is dialled once: if every one refuses, open fails
// at once. A server that does not answer at all is not a refusal: it may
// be slow, and the wait goes on.
const (
	probeAfter   = 250 * time.Millisecond
	probeTimeout = time.Second
)

// openQuickly is connection.Open bounded by timeout, failing early when
// every server refuses the connection. It fails with exit status 5, or
// with ctx's error when ctx ends first.
func openQuickly(ctx context.Context, servers []string, timeout time.Duration, opts []connection.Option) (*connection.Client, error) {
	openCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	type opened struct {
		c   *connection.Client
		err error
	}
	done := make(chan opened, 1)
	go func() {
		c, err := connection.Open(openCtx, servers, opts...)
		done <- opened{c, err}
	}()
	probe := time.NewTimer(probeAfter)
	defer probe.Stop()
	var refused chan bool
	var wg sync.WaitGroup
	defer wg.Wait() // runs after cancel: the probe ends with openCtx
	defer cancel()
	for {
		select {
		case r := <-done:
			if r.err != nil {
				return nil, noSession(ctx, servers, timeout, r.err)
			}
			return r.c, nil
		case <-probe.C:
			refused = make(chan bool, 1)
			wg.Add(1)
			go func() {
				defer wg.Done()
				refused <- allRefuse(openCtx, servers)
			}()
		case all := <-refused:
			refused = nil
			if !all {
				continue
			}
			cancel()
			if r := <-done; r.err == nil {
				return r.c, nil // a server came up meanwhile
			}
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, &exitError{exitNoServer, "connection refused by every server: " + strings.Join(servers, ", ")}
		}
	}
}

// noSession is the error of an Open that failed.
func noSession(ctx context.Context, servers []string, timeout time.Duration, err error) error {
	switch {
	case ctx.Err() != nil:
		return err // interrupted: it wraps ctx's error
	case errors.Is(err, context.DeadlineExceeded):
		return &exitError{exitNoServer, fmt.Sprintf("cannot reach ZooKeeper at %s: no session within %v (--connect-timeout)", strings.Join(servers, ","), timeout)}
	}
	return &exitError{exitNoServer, fmt.Sprintf("cannot reach ZooKeeper: %v", err)}
}

// allRefuse dials every server once and reports whether each refused the
// connection (nothing listens on its port).
func allRefuse(ctx context.Context, servers []string) bool {
	d := net.Dialer{Timeout: probeTimeout}
	refusals := make(chan bool, len(servers))
	for _, s := range servers {
		go func() {
			c, err := d.DialContext(ctx, "tcp", s)
			if err == nil {
				c.Close()
			}
			refusals <- errors.Is(err, syscall.ECONNREFUSED)
		}()
	}
	all := true
	for range servers {
		all = <-refusals && all
	}
	return all
}
