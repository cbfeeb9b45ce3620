package zkserver

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// ErrNoTLS is returned by the TLS accessors of an ensemble started
// without WithTLS, or by a backend other than the local one.
var ErrNoTLS = errors.New("zktest: the ensemble has no TLS port (WithTLS, local backend)")

// WithTLS gives every server of the local backend a TLS client port as
// well (ZooKeeper's secureClientPort, on Netty), with a key and a
// self-signed certificate for 127.0.0.1 made by keytool for the ensemble.
// SecureServers returns the TLS addresses and TLSConfig a client
// configuration that trusts that certificate.
func WithTLS() Option {
	return func(c *config) error {
		c.tls = true
		return nil
	}
}

// WithTLSClientAuth is WithTLS with servers that require a client
// certificate (ssl.clientAuth=need): a certificate for the client is made
// with the ensemble's keys and trusted by the servers, and TLSConfig
// presents it. A TLS client without it cannot connect.
func WithTLSClientAuth() Option {
	return func(c *config) error {
		c.tls, c.tlsClientAuth = true, true
		return nil
	}
}

// keystorePassword protects a throwaway test keystore.
const keystorePassword = "zktest-keystore"

// tlsFiles is the keystore the servers use and the certificate clients
// trust.
type tlsFiles struct {
	keystore   string // PKCS12: the servers' key and certificate
	truststore string // PKCS12: the certificate, trusted
	certPEM    []byte
	// client is the client's certificate and key, WithTLSClientAuth; the
	// truststore trusts it too.
	client *tls.Certificate
}

// makeKeystore makes a key pair and a self-signed certificate for
// 127.0.0.1 and localhost in dir, with the JDK's keytool next to java;
// with clientAuth, a client certificate too, trusted by the servers.
func makeKeystore(java, dir string, clientAuth bool) (*tlsFiles, error) {
	keytool := filepath.Join(filepath.Dir(java), "keytool")
	if _, err := os.Stat(keytool); err != nil {
		if keytool, err = exec.LookPath("keytool"); err != nil {
			return nil, fmt.Errorf("zktest: WithTLS needs the JDK's keytool: %w", err)
		}
	}
	ks := filepath.Join(dir, "keystore.p12")
	pem := filepath.Join(dir, "cert.pem")
	run := func(args ...string) error {
		if out, err := exec.Command(keytool, args...).CombinedOutput(); err != nil {
			return fmt.Errorf("zktest: keytool %s: %v: %s", args[0], err, out)
		}
		return nil
	}
	if err := run("-genkeypair", "-alias", "zktest", "-keyalg", "EC", "-groupname", "secp256r1", "-validity", "7",
		"-keystore", ks, "-storetype", "PKCS12", "-storepass", keystorePassword, "-keypass", keystorePassword,
		"-dname", "CN=zktest", "-ext", "SAN=ip:127.0.0.1,dns:localhost"); err != nil {
		return nil, err
	}
	if err := run("-exportcert", "-rfc", "-alias", "zktest", "-keystore", ks, "-storepass", keystorePassword, "-file", pem); err != nil {
		return nil, err
	}
	ts := filepath.Join(dir, "truststore.p12")
	if err := run("-importcert", "-noprompt", "-alias", "zktest", "-file", pem, "-keystore", ts,
		"-storetype", "PKCS12", "-storepass", keystorePassword); err != nil {
		return nil, err
	}
	cert, err := os.ReadFile(pem)
	if err != nil {
		return nil, err
	}
	files := &tlsFiles{keystore: ks, truststore: ts, certPEM: cert}
	if clientAuth {
		client, certPEM, err := clientCertificate()
		if err != nil {
			return nil, err
		}
		cpem := filepath.Join(dir, "client.pem")
		if err := os.WriteFile(cpem, certPEM, 0o600); err != nil {
			return nil, err
		}
		if err := run("-importcert", "-noprompt", "-alias", "zktest-client", "-file", cpem, "-keystore", ts,
			"-storetype", "PKCS12", "-storepass", keystorePassword); err != nil {
			return nil, err
		}
		files.client = client
	}
	return files, nil
}

// clientCertificate makes a key and a self-signed client certificate.
func clientCertificate() (*tls.Certificate, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: "zktest-client"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(7 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key},
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

// tlsConfigLines are the zoo.cfg lines of a server's TLS port.
func (f *tlsFiles) configLines(securePort int) string {
	return fmt.Sprintf(`serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory
secureClientPort=%d
secureClientPortAddress=127.0.0.1
ssl.keyStore.location=%s
ssl.keyStore.password=%s
ssl.keyStore.type=PKCS12
ssl.trustStore.location=%s
ssl.trustStore.password=%s
ssl.trustStore.type=PKCS12
ssl.clientAuth=%s
`, securePort, f.keystore, keystorePassword, f.truststore, keystorePassword, f.clientAuth())
}

func (f *tlsFiles) clientAuth() string {
	if f.client != nil {
		return "need"
	}
	return "none"
}

// SecureServers returns the TLS client addresses of the servers.
func (e *Ensemble) SecureServers() ([]string, error) {
	lb, ok := e.b.(*localBackend)
	if !ok || lb.tls == nil {
		return nil, ErrNoTLS
	}
	out := make([]string, len(lb.servers))
	for i, s := range lb.servers {
		out[i] = s.secureAddr
	}
	return out, nil
}

// TLSConfig returns a client configuration that trusts the ensemble's
// certificate (and nothing else) and, WithTLSClientAuth, presents the
// client certificate the servers trust.
func (e *Ensemble) TLSConfig() (*tls.Config, error) {
	lb, ok := e.b.(*localBackend)
	if !ok || lb.tls == nil {
		return nil, ErrNoTLS
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(lb.tls.certPEM) {
		return nil, errors.New("zktest: the ensemble's certificate does not parse")
	}
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if lb.tls.client != nil {
		cfg.Certificates = []tls.Certificate{*lb.tls.client}
	}
	return cfg, nil
}

// TLSCertPEM returns the ensemble's certificate in PEM, for clients that
// read a CA file.
func (e *Ensemble) TLSCertPEM() []byte {
	lb, ok := e.b.(*localBackend)
	if !ok || lb.tls == nil {
		return nil
	}
	return append([]byte(nil), lb.tls.certPEM...)
}
