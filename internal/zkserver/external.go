package zkserver

import (
	"fmt"
	"net"
	"strings"
)

// externalBackend is an ensemble someone else runs (ZKTEST_SERVERS). It
// cannot be broken on purpose.
type externalBackend struct{ servers []string }

func newExternal(list string) (Backend, error) {
	var servers []string
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(s); err != nil {
			return nil, fmt.Errorf("zktest: ZKTEST_SERVERS: %q is not host:port: %w", s, err)
		}
		servers = append(servers, s)
	}
	if len(servers) == 0 {
		return nil, fmt.Errorf("zktest: ZKTEST_SERVERS=%q names no server", list)
	}
	return &externalBackend{servers: servers}, nil
}

func (b *externalBackend) Name() string       { return "external" }
func (b *externalBackend) Addrs() []string    { return append([]string(nil), b.servers...) }
func (b *externalBackend) Stop(int) error     { return ErrNoFaults }
func (b *externalBackend) Start(int) error    { return ErrNoFaults }
func (b *externalBackend) Kill(int) error     { return ErrNoFaults }
func (b *externalBackend) Pause(int) error    { return ErrNoFaults }
func (b *externalBackend) Resume(int) error   { return ErrNoFaults }
func (b *externalBackend) LogTail(int) string { return "" }
func (b *externalBackend) Close() error       { return nil }
