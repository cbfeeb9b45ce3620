package zkserver

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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

// keystorePassword protects a throwaway test keystore.
const keystorePassword = "zktest-keystore"

// tlsFiles is the keystore the servers use and the certificate clients
// trust.
type tlsFiles struct {
	keystore   string // PKCS12: the servers' key and certificate
	truststore string // PKCS12: the certificate, trusted
	certPEM    []byte
}

// makeKeystore makes a key pair and a self-signed certificate for
// 127.0.0.1 and localhost in dir, with the JDK's keytool next to java.
func makeKeystore(java, dir string) (*tlsFiles, error) {
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
	return &tlsFiles{keystore: ks, truststore: ts, certPEM: cert}, nil
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
ssl.clientAuth=none
`, securePort, f.keystore, keystorePassword, f.truststore, keystorePassword)
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
// certificate (and nothing else).
func (e *Ensemble) TLSConfig() (*tls.Config, error) {
	lb, ok := e.b.(*localBackend)
	if !ok || lb.tls == nil {
		return nil, ErrNoTLS
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(lb.tls.certPEM) {
		return nil, errors.New("zktest: the ensemble's certificate does not parse")
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
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
