package connection_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// TestTLS: a server's TLS client port (secureClientPort, with a keystore
// keytool made for the test) serves a client WithTLS that trusts its
// certificate — it takes a lock there — refuses a plain client, and a
// client that does not trust the certificate fails at once with ErrTLS,
// wrapping the x509 error.
func TestTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	skipUnderRace(t)
	ens := zktest.Start(t, zktest.WithTLS())
	secure, err := ens.SecureServers()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := ens.TLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxFor(t, time.Minute)

	c := open(t, secure, connection.WithTLS(cfg))
	m, err := mutex.New(c, "/tls-lock")
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Lock(ctx); err != nil {
		t.Fatalf("Lock over TLS: %v", err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}

	plainCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if pc, err := connection.Open(plainCtx, secure); err == nil {
		pc.Close()
		t.Fatal("a plain client got a session on the TLS port")
	}

	start := time.Now()
	_, err = connection.Open(ctx, secure, connection.WithTLS(&tls.Config{RootCAs: x509.NewCertPool()}))
	var unknown x509.UnknownAuthorityError
	var verify *tls.CertificateVerificationError
	if !errors.Is(err, connection.ErrTLS) || !(errors.As(err, &unknown) || errors.As(err, &verify)) {
		t.Fatalf("Open with an untrusted certificate = %v, want ErrTLS wrapping the x509 error", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("the certificate error took %v to surface", d)
	}
	t.Logf("untrusted: %v", err)

	// The package's shared ensemble is one started without WithTLS.
	if _, err := shared.Ensemble(t).SecureServers(); !errors.Is(err, zktest.ErrNoTLS) {
		t.Fatalf("SecureServers without WithTLS = %v, want ErrNoTLS", err)
	}
}

// TestTLSClientCertificate: servers that require a client certificate
// (ssl.clientAuth=need) serve a client that presents one they trust — it
// takes a lock — and refuse one without: Open fails at once with ErrTLS,
// not after its deadline.
func TestTLSClientCertificate(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	skipUnderRace(t)
	ens := zktest.Start(t, zktest.WithTLSClientAuth())
	secure, err := ens.SecureServers()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := ens.TLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Certificates) != 1 {
		t.Fatalf("TLSConfig of a client-auth ensemble has %d certificates, want 1", len(cfg.Certificates))
	}
	ctx := ctxFor(t, time.Minute)

	c := open(t, secure, connection.WithTLS(cfg))
	m, err := mutex.New(c, "/mtls-lock")
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Lock(ctx); err != nil {
		t.Fatalf("Lock with a client certificate: %v", err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}

	noCert := cfg.Clone()
	noCert.Certificates = nil
	start := time.Now()
	octx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	nc, err := connection.Open(octx, secure, connection.WithTLS(noCert))
	if err == nil {
		nc.Close()
		t.Fatal("a client without a certificate got a session")
	}
	if !errors.Is(err, connection.ErrTLS) {
		t.Fatalf("Open without a client certificate = %v, want ErrTLS", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("the refusal took %v to surface", d)
	}
	t.Logf("without a client certificate: %v", err)
}

// skipUnderRace skips a TLS test under the race detector: it would spend
// the test's time in crypto/tls's handshakes, instrumented (five times
// slower), while what the test checks of the connection is its dialer,
// the rest being the code every other test runs under -race over plain
// TCP. make test runs these tests without -race (scripts/race-skipped.sh
// finds them by this call).
func skipUnderRace(t *testing.T) {
	t.Helper()
	if raceDetector {
		t.Skip("TLS handshakes under -race: run without it by make test")
	}
}
