// Package zkserver runs real ZooKeeper servers: a local ensemble of Java
// processes from a Debian or Apache install, an external ensemble, or a
// registered backend; fault injection (stop, start, kill, pause, resume,
// partitions between servers), a TCP proxy in front of clients, and the
// four-letter words. It is what testing/zktest is built on, without the
// testing package, so that the zkrecipes command's demo and cmd/zkbench
// can start a ZooKeeper without linking test code. It is the one package
// of internal/testinfra that the shipped zkrecipes binary links (for its
// demo's local server, and for zkrecipes dev).
package zkserver
