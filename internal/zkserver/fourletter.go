package zkserver

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"
)

// FourLetter sends a four-letter word ("srvr", "stat", "mntr", ...) to the
// server at addr and returns its answer. The server must allow the word
// (the local and docker backends allow all of them).
func FourLetter(addr, word string, timeout time.Duration) (string, error) {
	if len(word) != 4 {
		return "", fmt.Errorf("zktest: four-letter word %q has %d letters", word, len(word))
	}
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(timeout)); err != nil {
		return "", err
	}
	if _, err := io.WriteString(conn, word); err != nil {
		return "", err
	}
	b, err := io.ReadAll(conn)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// errNoMode means a srvr answer had no Mode line: the server is up but
// not serving (no quorum yet), or the word is not allowed.
var errNoMode = errors.New("zktest: srvr answer has no Mode line")

// ServerMode asks addr for "srvr" and returns its mode: "leader",
// "follower", "observer" or "standalone". A server that does not serve
// requests yet answers without a mode, which is an error here. (A plain
// "ruok" is no readiness check: it answers "imok" before the server serves.)
func ServerMode(addr string, timeout time.Duration) (string, error) {
	out, err := FourLetter(addr, "srvr", timeout)
	if err != nil {
		return "", err
	}
	return parseMode(out)
}

// parseMode finds the "Mode: x" line of a srvr answer. It does not parse
// the version line, which some builds (Debian's 3.8.0) print in a shape
// other parsers reject.
func parseMode(srvr string) (string, error) {
	sc := bufio.NewScanner(strings.NewReader(srvr))
	for sc.Scan() {
		if mode, ok := strings.CutPrefix(sc.Text(), "Mode:"); ok {
			if mode = strings.TrimSpace(mode); mode != "" {
				return mode, nil
			}
		}
	}
	return "", errNoMode
}
