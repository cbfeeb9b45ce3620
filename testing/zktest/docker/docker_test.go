package docker_test

import (
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/testing/zktest"
	"github.com/zkrecipes/zkrecipes/testing/zktest/docker"
)

// TestDockerEnsemble starts a 3-server ensemble in containers, stops and
// restarts its leader, and reads from it throughout. It needs a Docker
// engine and skips, saying so, where none answers.
func TestDockerEnsemble(t *testing.T) {
	if !docker.Available() {
		t.Skip("zktest/docker: no Docker engine answers (DOCKER_HOST, or a daemon on the default socket): the Docker backend cannot be tested here")
	}
	ens := zktest.Start(t, zktest.WithBackend("docker"), zktest.WithServers(3))
	if ens.Backend() != "docker" {
		t.Fatalf("backend %q, want docker", ens.Backend())
	}
	conn := ens.Conn(t)
	if _, err := conn.Create("/docker", nil, 0, nil); err != nil {
		t.Fatal(err)
	}
	leader := ens.MustLeader(t)
	if err := ens.Stop(leader); err != nil {
		t.Fatal(err)
	}
	if err := ens.Start(leader); err != nil {
		t.Fatal(err)
	}
	zktest.Eventually(t, 30*time.Second, "the node after a leader restart", func() error {
		_, _, err := conn.Get("/docker")
		return err
	})
}

// TestRegistered: importing the package registers the backend.
func TestRegistered(t *testing.T) {
	if _, err := zktest.New(zktest.WithBackend("no-such-backend")); err == nil {
		t.Fatal("an unregistered backend started")
	}
	if docker.Available() {
		t.Skip("a Docker engine answers: TestDockerEnsemble covers the rest")
	}
	_, err := zktest.New(zktest.WithBackend("docker"))
	if err == nil {
		t.Fatal("the docker backend started without a Docker engine")
	}
	t.Logf("without a Docker engine: %v", err)
}
