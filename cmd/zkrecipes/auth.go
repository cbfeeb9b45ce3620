package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/zkrecipes/zkrecipes/connection"
)

// Credentials come from the environment, never from flags: a flag's value
// shows in ps and in shell history.
//
//	ZK_AUTH=user:password        digest authentication
//	ZK_AUTH_FILE=/path/to/file   the same, read from a file (its first line)
const authHelp = `ZooKeeper credentials (digest) come from ZK_AUTH=user:password or from
ZK_AUTH_FILE (a file whose first line is user:password); they are never
printed, and a command run under a hold does not get them unless
--pass-auth. TLS: ZK_TLS_CA_FILE=ca.pem connects to the servers' TLS ports
trusting that CA; ZK_TLS=system trusts the system's roots.`

// errBadAuth means ZK_AUTH or ZK_AUTH_FILE is not user:password. Its
// message never holds the secret.
var errBadAuth = errors.New("ZK_AUTH or ZK_AUTH_FILE must be user:password")

// authOptions returns the client options for the credentials in the
// environment, if any.
func authOptions() ([]connection.Option, error) {
	cred := os.Getenv("ZK_AUTH")
	if file := os.Getenv("ZK_AUTH_FILE"); cred == "" && file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("ZK_AUTH_FILE: %w", err)
		}
		cred, _, _ = strings.Cut(string(b), "\n")
		cred = strings.TrimSpace(cred)
	}
	if cred == "" {
		return nil, nil
	}
	user, password, ok := strings.Cut(cred, ":")
	if !ok || user == "" || password == "" {
		return nil, errBadAuth
	}
	return []connection.Option{connection.WithDigestAuth(user, password)}, nil
}

// tlsOptions returns the client option for TLS asked for in the
// environment, if any.
func tlsOptions() ([]connection.Option, error) {
	file, mode := os.Getenv("ZK_TLS_CA_FILE"), os.Getenv("ZK_TLS")
	switch {
	case file != "":
		pem, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("ZK_TLS_CA_FILE: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("ZK_TLS_CA_FILE: %s holds no PEM certificate", file)
		}
		return []connection.Option{connection.WithTLS(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})}, nil
	case mode == "system":
		return []connection.Option{connection.WithTLS(&tls.Config{MinVersion: tls.VersionTLS12})}, nil
	case mode != "":
		return nil, fmt.Errorf("ZK_TLS=%q: want system (or set ZK_TLS_CA_FILE)", mode)
	}
	return nil, nil
}

// openOptions is the environment's credentials and TLS, then opts.
func openOptions(opts ...connection.Option) ([]connection.Option, error) {
	auth, err := authOptions()
	if err != nil {
		return nil, err
	}
	tlsOpts, err := tlsOptions()
	if err != nil {
		return nil, err
	}
	return append(append(auth, tlsOpts...), opts...), nil
}
