"""A Kazoo Lock steered line by line over stdin, for the interop tests.

Usage: kazoo_driver.py <hosts> <lock path> [lock|write|queue|counter|curatorcounter|writer|party ID|shallowparty ID|partitioner ID ITEMS BOUNDARY]
(a Lock that also sees Curator-layout mutex nodes, a WriteLock that also
sees Curator-layout read/write lock nodes, a LockingQueue, a Counter — text,
or with support_curator=True — or plain writes as an application makes
them, the lock path unused)
Commands: acquire [timeoutSeconds] | release | contenders | quit
Answers:  READY | ACQUIRED | TIMEOUT | RELEASED | CONTENDERS <a,b,...> | ERROR <message>
Queue commands: put <value> [priority] | get [timeoutSeconds] | consume | release | len | quit
Queue answers:  PUT | ITEM <value> | TIMEOUT | CONSUMED <True|False> | RELEASED <True|False> | LEN <n>
Counter commands: add <delta> <n> (n adds of delta, one after the other) | get | quit
Counter answers:  ADDED <succeeded> 0 <failed with an exception> | VALUE <n>
Writer commands: create [-ephemeral] [-sequence] <path> [data] (parents made, persistent and empty)
                 | set <path> <data> | delete <path> | session | quit
Writer answers:  CREATED <path> | SET <version> | DELETED | SESSION <hex id>
Party commands:  join | leave | members | quit   (a Party or ShallowParty at the lock path)
Party answers:   JOINED | LEFT | MEMBERS <id,...> (sorted)
Partitioner: a SetPartitioner at the lock path of the comma-separated ITEMS,
  time_boundary BOUNDARY seconds, run as Kazoo's documentation shows (release
  when asked, wait for acquire when allocating) in a thread of its own, which
  says STATE <name> [<items, comma-separated>] at every change of state
  (the items when ACQUIRED).
Partitioner commands: state | finish | quit
Partitioner answers:  STATE <name> [items] | FINISHED
Barriers (kinds barrier, a Barrier, and doublebarrier N, a DoubleBarrier of
N members, at the path):
  commands: set | remove | wait [timeoutSeconds] (barrier); enter | leave
            (doublebarrier); session (both)
  answers:  RAISED | REMOVED <True|False> | PASSED | TIMEOUT | ENTERED <participating>
            | LEFT | SESSION <hex id>
"""
import sys
import threading

from kazoo.client import KazooClient
from kazoo.exceptions import LockTimeout


_say_lock = threading.Lock()


def say(line):
    with _say_lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def main():
    hosts, path = sys.argv[1], sys.argv[2]
    kind = sys.argv[3] if len(sys.argv) > 3 else "lock"
    client = KazooClient(hosts=hosts, timeout=10.0)
    client.start(timeout=20)
    if kind in ("counter", "curatorcounter"):
        serve_counter(client.Counter(path, support_curator=(kind == "curatorcounter")))
        client.stop()
        client.close()
        return
    if kind == "queue":
        serve_queue(client.LockingQueue(path))
        client.stop()
        client.close()
        return
    if kind == "writer":
        serve_writer(client)
        client.stop()
        client.close()
        return
    if kind in ("party", "shallowparty"):
        make = client.Party if kind == "party" else client.ShallowParty
        serve_party(make(path, identifier=sys.argv[4]))
        client.stop()
        client.close()
        return
    if kind == "partitioner":
        serve_partitioner(client, path, sys.argv[4], sys.argv[5].split(","), float(sys.argv[6]))
        client.stop()
        client.close()
        return
    if kind in ("barrier", "doublebarrier"):
        serve_barrier(client, path, kind, sys.argv[4:])
        client.stop()
        client.close()
        return
    if kind == "write":
        # Curator-layout readers and writers block a Kazoo writer.
        lock = client.WriteLock(path, "kazoo", extra_lock_patterns=["__WRIT__", "__READ__"])
    else:
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


def serve_queue(queue):
    say("READY")
    for line in sys.stdin:
        cmd = line.split()
        if not cmd:
            continue
        try:
            if cmd[0] == "put":
                priority = int(cmd[2]) if len(cmd) > 2 else 100
                queue.put(cmd[1].encode(), priority=priority)
                say("PUT")
            elif cmd[0] == "get":
                timeout = float(cmd[1]) if len(cmd) > 1 else None
                value = queue.get(timeout=timeout)
                say("TIMEOUT" if value is None else "ITEM " + value.decode())
            elif cmd[0] == "consume":
                say("CONSUMED %s" % queue.consume())
            elif cmd[0] == "release":
                say("RELEASED %s" % queue.release())
            elif cmd[0] == "len":
                say("LEN %d" % len(queue))
            elif cmd[0] == "quit":
                break
            else:
                say("ERROR unknown command " + cmd[0])
        except Exception as e:  # report, keep serving
            say("ERROR %r" % (e,))


def serve_counter(counter):
    say("READY")
    for line in sys.stdin:
        cmd = line.split()
        if not cmd:
            continue
        try:
            if cmd[0] == "add":
                delta, n = int(cmd[1]), int(cmd[2])
                ok = failed = 0
                for _ in range(n):
                    try:
                        counter += delta
                        ok += 1
                    except Exception:  # the add may or may not have applied
                        failed += 1
                say("ADDED %d 0 %d" % (ok, failed))
            elif cmd[0] == "get":
                say("VALUE %d" % counter.value)
            elif cmd[0] == "quit":
                break
            else:
                say("ERROR unknown command " + cmd[0])
        except Exception as e:  # report, keep serving
            say("ERROR %r" % (e,))


def serve_party(party):
    say("READY")
    for line in sys.stdin:
        cmd = line.split()
        if not cmd:
            continue
        try:
            if cmd[0] == "join":
                party.join()
                say("JOINED")
            elif cmd[0] == "leave":
                party.leave()
                say("LEFT")
            elif cmd[0] == "members":
                say("MEMBERS " + ",".join(sorted(party)))
            elif cmd[0] == "quit":
                break
            else:
                say("ERROR unknown command " + cmd[0])
        except Exception as e:  # report, keep serving
            say("ERROR %r" % (e,))


def serve_partitioner(client, path, identifier, items, boundary):
    changed = threading.Event()
    part = client.SetPartitioner(path, set=items, identifier=identifier,
                                 time_boundary=boundary, state_change_event=changed)
    stop = threading.Event()

    def state_line():
        line = "STATE " + part.state
        if part.acquired:
            line += " " + ",".join(sorted(part))
        return line

    def run():
        # Kazoo's documented loop, with the state said at every change.
        last = None
        while not stop.is_set():
            changed.clear()
            line = state_line()
            if line != last:
                say(line)
                last = line
            if part.failed:
                return
            if part.release:
                part.release_set()
                continue
            if part.allocating:
                part.wait_for_acquire(0.2)
                continue
            changed.wait(0.2)

    say("READY")
    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    for line in sys.stdin:
        cmd = line.split()
        if not cmd:
            continue
        try:
            if cmd[0] == "state":
                say(state_line())
            elif cmd[0] == "finish":
                stop.set()
                worker.join()
                part.finish()
                say("FINISHED")
            elif cmd[0] == "quit":
                break
            else:
                say("ERROR unknown command " + cmd[0])
        except Exception as e:  # report, keep serving
            say("ERROR %r" % (e,))
    stop.set()
    worker.join()


def serve_writer(client):
    say("READY")
    for line in sys.stdin:
        cmd = line.split()
        if not cmd:
            continue
        try:
            if cmd[0] == "create":
                flags = [a for a in cmd[1:] if a.startswith("-")]
                args = [a for a in cmd[1:] if not a.startswith("-")]
                value = args[1].encode() if len(args) > 1 else b""
                created = client.create(args[0], value, ephemeral="-ephemeral" in flags,
                                        sequence="-sequence" in flags, makepath=True)
                say("CREATED " + created)
            elif cmd[0] == "set":
                say("SET %d" % client.set(cmd[1], cmd[2].encode()).version)
            elif cmd[0] == "delete":
                client.delete(cmd[1])
                say("DELETED")
            elif cmd[0] == "session":
                say("SESSION %x" % client.client_id[0])
            elif cmd[0] == "quit":
                break
            else:
                say("ERROR unknown command " + cmd[0])
        except Exception as e:  # report, keep serving
            say("ERROR %r" % (e,))


def serve_barrier(client, path, kind, args):
    if kind == "barrier":
        barrier = client.Barrier(path)
    else:
        barrier = client.DoubleBarrier(path, int(args[0]))
    say("READY")
    for line in sys.stdin:
        cmd = line.split()
        if not cmd:
            continue
        try:
            if cmd[0] == "set" and kind == "barrier":
                barrier.create()
                say("RAISED")
            elif cmd[0] == "remove" and kind == "barrier":
                say("REMOVED %s" % barrier.remove())
            elif cmd[0] == "wait" and kind == "barrier":
                timeout = float(cmd[1]) if len(cmd) > 1 else None
                say("PASSED" if barrier.wait(timeout) else "TIMEOUT")
            elif cmd[0] == "enter" and kind == "doublebarrier":
                barrier.enter()
                say("ENTERED %s" % barrier.participating)
            elif cmd[0] == "leave" and kind == "doublebarrier":
                barrier.leave()
                say("LEFT")
            elif cmd[0] == "session":
                say("SESSION %x" % client.client_id[0])
            elif cmd[0] == "quit":
                break
            else:
                say("ERROR unknown command " + cmd[0])
        except Exception as e:  # report, keep serving
            say("ERROR %r" % (e,))


if __name__ == "__main__":
    main()
