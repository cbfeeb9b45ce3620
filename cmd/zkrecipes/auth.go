package main

import (
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
printed.`

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

// openOptions is authOptions followed by opts.
func openOptions(opts ...connection.Option) ([]connection.Option, error) {
	auth, err := authOptions()
	if err != nil {
		return nil, err
	}
	return append(auth, opts...), nil
}
