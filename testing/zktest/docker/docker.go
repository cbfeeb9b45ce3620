// Package docker is the Docker backend of zktest: each ZooKeeper server
// in a container of the official image, started with testcontainers-go.
// It lives in a module of its own so that programs using zkrecipes do not
// inherit Docker's client, testcontainers and their dependencies. Import it
// for its side effect in the tests that want it:
//
//	import _ "github.com/zkrecipes/zkrecipes/testing/zktest/docker"
//
// zktest then uses it when ZKTEST_BACKEND=docker (or WithBackend("docker")),
// or when there is no local ZooKeeper install and a Docker engine answers.
package docker

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
	"github.com/docker/go-connections/nat"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/network"

	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

func init() {
	zktest.RegisterBackend(zktest.BackendFactory{Name: "docker", Available: Available, Start: Start})
}

// Available reports whether a Docker engine answers within a second.
func Available() bool {
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return false
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err = cli.Ping(ctx)
	return err == nil
}

// dockerBackend runs each server in a container of the official image, on
// a network of its own, with each client port published on a fixed
// loopback port so that addresses survive a restart.
type dockerBackend struct {
	cfg        zktest.BackendConfig
	cli        client.APIClient
	net        *testcontainers.DockerNetwork
	containers []testcontainers.Container
	servers    []string
}

// Start starts an ensemble of cfg.Servers containers of cfg.Image
// (zktest.DefaultDockerImage when empty).
func Start(cfg zktest.BackendConfig) (zktest.Backend, error) {
	if !Available() {
		return nil, fmt.Errorf("%w: the docker backend was asked for, but no Docker engine answers (is DOCKER_HOST set, is the daemon running?)", zktest.ErrNoZooKeeper)
	}
	if cfg.Image == "" {
		cfg.Image = zktest.DefaultDockerImage
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = zktest.DefaultStartTimeout
	}
	if cfg.TickTime <= 0 {
		cfg.TickTime = zktest.DefaultTickTime
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.StartTimeout)
	defer cancel()
	b := &dockerBackend{cfg: cfg}
	var err error
	if b.net, err = network.New(ctx); err != nil {
		return nil, fmt.Errorf("zktest: docker network: %w", err)
	}
	n := cfg.Servers
	ports, err := freePorts(n)
	if err != nil {
		b.Close()
		return nil, err
	}
	var quorum []string
	for i := range n {
		quorum = append(quorum, fmt.Sprintf("server.%d=zk%d:2888:3888;2181", i+1, i+1))
	}
	tick := cfg.TickTime.Milliseconds()
	for i := range n {
		port := strconv.Itoa(ports[i])
		req := testcontainers.GenericContainerRequest{
			ContainerRequest: testcontainers.ContainerRequest{
				Image:          cfg.Image,
				ExposedPorts:   []string{"2181/tcp"},
				Networks:       []string{b.net.Name},
				NetworkAliases: map[string][]string{b.net.Name: {"zk" + strconv.Itoa(i+1)}},
				Env: map[string]string{
					"ZOO_MY_ID":                  strconv.Itoa(i + 1),
					"ZOO_SERVERS":                strings.Join(quorum, " "),
					"ZOO_STANDALONE_ENABLED":     strconv.FormatBool(n == 1),
					"ZOO_TICK_TIME":              strconv.FormatInt(tick, 10),
					"ZOO_INIT_LIMIT":             strconv.FormatInt(max(10, 10000/tick), 10),
					"ZOO_SYNC_LIMIT":             strconv.FormatInt(max(5, 5000/tick), 10),
					"ZOO_MAX_CLIENT_CNXNS":       "0",
					"ZOO_4LW_COMMANDS_WHITELIST": "*",
					"ZOO_ADMINSERVER_ENABLED":    "false",
					"ZOO_CFG_EXTRA":              fmt.Sprintf("minSessionTimeout=%d maxSessionTimeout=%d", 2*tick, max(60000, 20*tick)),
					"SERVER_JVMFLAGS":            serverJVMFlags(cfg),
				},
				HostConfigModifier: func(hc *container.HostConfig) {
					hc.PortBindings = nat.PortMap{"2181/tcp": {{HostIP: "127.0.0.1", HostPort: port}}}
				},
			},
		}
		c, err := testcontainers.GenericContainer(ctx, req)
		if err != nil {
			b.Close()
			return nil, fmt.Errorf("zktest: start container %d (%s): %w", i+1, cfg.Image, err)
		}
		b.containers = append(b.containers, c)
		b.servers = append(b.servers, net.JoinHostPort("127.0.0.1", port))
	}
	for i, c := range b.containers {
		if err := c.Start(ctx); err != nil {
			b.Close()
			return nil, fmt.Errorf("zktest: start container %d: %w", i+1, err)
		}
	}
	for i := range b.containers {
		if err := b.waitReady(i, time.Now().Add(cfg.StartTimeout)); err != nil {
			b.Close()
			return nil, err
		}
	}
	provider, err := testcontainers.NewDockerProvider()
	if err != nil {
		b.Close()
		return nil, err
	}
	b.cli = provider.Client()
	return b, nil
}

func (b *dockerBackend) waitReady(i int, deadline time.Time) error {
	for {
		if _, err := zktest.ServerMode(b.servers[i], 500*time.Millisecond); err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("zktest: container %d (%s) not serving after the start timeout", i+1, b.servers[i])
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (b *dockerBackend) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), b.cfg.StartTimeout)
}

func (b *dockerBackend) Name() string    { return "docker" }
func (b *dockerBackend) Addrs() []string { return append([]string(nil), b.servers...) }

func (b *dockerBackend) Stop(i int) error {
	ctx, cancel := b.ctx()
	defer cancel()
	grace := 10 * time.Second
	return b.containers[i].Stop(ctx, &grace)
}

func (b *dockerBackend) Kill(i int) error {
	ctx, cancel := b.ctx()
	defer cancel()
	return b.cli.ContainerKill(ctx, b.containers[i].GetContainerID(), "KILL")
}

func (b *dockerBackend) Start(i int) error {
	ctx, cancel := b.ctx()
	defer cancel()
	if err := b.containers[i].Start(ctx); err != nil {
		return err
	}
	return b.waitReady(i, time.Now().Add(b.cfg.StartTimeout))
}

func (b *dockerBackend) Pause(i int) error {
	ctx, cancel := b.ctx()
	defer cancel()
	return b.cli.ContainerPause(ctx, b.containers[i].GetContainerID())
}

func (b *dockerBackend) Resume(i int) error {
	ctx, cancel := b.ctx()
	defer cancel()
	return b.cli.ContainerUnpause(ctx, b.containers[i].GetContainerID())
}

func (b *dockerBackend) LogTail(i int) string {
	ctx, cancel := b.ctx()
	defer cancel()
	r, err := b.containers[i].Logs(ctx)
	if err != nil {
		return ""
	}
	defer r.Close()
	buf := make([]byte, 64<<10)
	n, _ := r.Read(buf)
	return string(buf[:n])
}

func (b *dockerBackend) Close() error {
	ctx, cancel := b.ctx()
	defer cancel()
	var first error
	for _, c := range b.containers {
		if err := c.Terminate(ctx); err != nil && first == nil {
			first = err
		}
	}
	if b.net != nil {
		if err := b.net.Remove(ctx); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// freePorts returns n distinct free loopback ports.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// serverJVMFlags are the java flags the image's start script passes to the
// server: the option for TTL nodes when the ensemble asks for them.
func serverJVMFlags(cfg zktest.BackendConfig) string {
	if cfg.ExtendedTypes {
		return zktest.ExtendedTypesFlag
	}
	return ""
}
