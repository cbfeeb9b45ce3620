package zkserver

import "fmt"

// Java returns the java binary and the class path of the local ZooKeeper
// install (ZOOKEEPER_HOME, else Debian's package), for tests that run the
// server's classes in a program of their own
// (internal/testinfra/seqserver). The error wraps ErrNoZooKeeper and says
// how to install one.
func Java() (java string, classpath []string, err error) {
	inst, err := lookupLocalInstall()
	if err != nil {
		return "", nil, fmt.Errorf("%w: %v\n%s", ErrNoZooKeeper, err, installHelp)
	}
	return inst.java, inst.classpath, nil
}
