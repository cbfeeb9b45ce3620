"""A Kazoo Lock steered line by line over stdin, for the interop tests.

Usage: kazoo_driver.py <hosts> <lock path>
Commands: acquire [timeoutSeconds] | release | contenders | quit
Answers:  READY | ACQUIRED | TIMEOUT | RELEASED | CONTENDERS <a,b,...> | ERROR <message>
"""
import sys

from kazoo.client import KazooClient
from kazoo.exceptions import LockTimeout


def say(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def main():
    hosts, path = sys.argv[1], sys.argv[2]
    client = KazooClient(hosts=hosts, timeout=10.0)
    client.start(timeout=20)
    # "-lock-" makes Kazoo see Curator-layout (and zkrecipes) contenders.
    lock = client.Lock(path, "kazoo", extra_lock_patterns=["-lock-"])
    say("READY")
    for line in sys.stdin:
        cmd = line.split()
        if not cmd:
            continue
        try:
            if cmd[0] == "acquire":
                timeout = float(cmd[1]) if len(cmd) > 1 else None
                try:
                    lock.acquire(timeout=timeout)
                    say("ACQUIRED")
                except LockTimeout:
                    say("TIMEOUT")
            elif cmd[0] == "release":
                lock.release()
                say("RELEASED")
            elif cmd[0] == "contenders":
                say("CONTENDERS " + ",".join(lock.contenders()))
            elif cmd[0] == "quit":
                break
            else:
                say("ERROR unknown command " + cmd[0])
        except Exception as e:  # report, keep serving
            say("ERROR %r" % (e,))
    client.stop()
    client.close()


if __name__ == "__main__":
    main()
