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
Leases (kind lease; the path unused): Kazoo's NonBlockingLease and
  MultiNonBlockingLease, the duration in seconds, the identifier, and
  optionally the time it is now (UTC, %Y-%m-%dT%H:%M:%S.%f) for utcnow.
  commands: lease <path> <seconds> <identifier> [now]
            | multilease <count> <path> <seconds> <identifier> [now] | raw <path>
  answers:  LEASE <True|False> | RAW <the node's data as text>
"""
import datetime
import sys
import threading

from kazoo.client import KazooClient
from kazoo.exceptions import LockTimeout


_say_lock = threading.Lock()


def say(line):
    with _say_lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def serve(commands, ready=None):
    """Says READY (then calls ready, if given), then answers each line of
    stdin until quit (or its end): commands maps a command's name to a
    function of its arguments that returns the answer line. An unknown
    command, and an exception, are answered with ERROR, and the driver
    keeps serving."""
    say("READY")
    if ready is not None:
        ready()
    for line in sys.stdin:
        cmd = line.split()
        if not cmd:
            continue
        if cmd[0] == "quit":
            break
        handle = commands.get(cmd[0])
        if handle is None:
            say("ERROR unknown command " + cmd[0])
            continue
        try:
            say(handle(cmd[1:]))
        except Exception as e:  # report, keep serving
            say("ERROR %r" % (e,))


def timeout_arg(args):
    return float(args[0]) if args else None


def main():
    hosts, path = sys.argv[1], sys.argv[2]
    kind = sys.argv[3] if len(sys.argv) > 3 else "lock"
    # Kazoo's default retries back off up to an hour between tries: after
    # a few faults in a row a driver would sit out minutes with the
    # servers up again. A peer in a timed test retries within a second.
    retry = dict(max_tries=-1, delay=0.05, backoff=2, max_delay=1.0)
    client = KazooClient(hosts=hosts, timeout=10.0, connection_retry=retry, command_retry=retry)
    client.start(timeout=20)
    if kind in ("counter", "curatorcounter"):
        serve_counter(client.Counter(path, support_curator=(kind == "curatorcounter")))
    elif kind == "queue":
        serve_queue(client.LockingQueue(path))
    elif kind == "writer":
        serve_writer(client)
    elif kind in ("party", "shallowparty"):
        make = client.Party if kind == "party" else client.ShallowParty
        serve_party(make(path, identifier=sys.argv[4]))
    elif kind == "partitioner":
        serve_partitioner(client, path, sys.argv[4], sys.argv[5].split(","), float(sys.argv[6]))
    elif kind in ("barrier", "doublebarrier"):
        serve_barrier(client, path, kind, sys.argv[4:])
    elif kind == "lease":
        serve_lease(client)
    elif kind == "write":
        # Curator-layout readers and writers block a Kazoo writer.
        serve_lock(client.WriteLock(path, "kazoo", extra_lock_patterns=["__WRIT__", "__READ__"]))
    else:
        # "-lock-" makes Kazoo see Curator-layout (and zkrecipes) contenders.
        serve_lock(client.Lock(path, "kazoo", extra_lock_patterns=["-lock-"]))
    client.stop()
    client.close()


def serve_lock(lock):
    def acquire(args):
        try:
            lock.acquire(timeout=timeout_arg(args))
            return "ACQUIRED"
        except LockTimeout:
            return "TIMEOUT"

    def release(args):
        lock.release()
        return "RELEASED"

    serve({
        "acquire": acquire,
        "release": release,
        "contenders": lambda args: "CONTENDERS " + ",".join(lock.contenders()),
    })


def serve_queue(queue):
    def put(args):
        priority = int(args[1]) if len(args) > 1 else 100
        queue.put(args[0].encode(), priority=priority)
        return "PUT"

    def get(args):
        value = queue.get(timeout=timeout_arg(args))
        return "TIMEOUT" if value is None else "ITEM " + value.decode()

    serve({
        "put": put,
        "get": get,
        "consume": lambda args: "CONSUMED %s" % queue.consume(),
        "release": lambda args: "RELEASED %s" % queue.release(),
        "len": lambda args: "LEN %d" % len(queue),
    })


def serve_counter(counter):
    def add(args):
        nonlocal counter
        delta, n = int(args[0]), int(args[1])
        ok = failed = 0
        for _ in range(n):
            try:
                counter += delta
                ok += 1
            except Exception:  # the add may or may not have applied
                failed += 1
        return "ADDED %d 0 %d" % (ok, failed)

    serve({
        "add": add,
        "get": lambda args: "VALUE %d" % counter.value,
    })


def serve_party(party):
    def join(args):
        party.join()
        return "JOINED"

    def leave(args):
        party.leave()
        return "LEFT"

    serve({
        "join": join,
        "leave": leave,
        "members": lambda args: "MEMBERS " + ",".join(sorted(party)),
    })


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

    def finish(args):
        stop.set()
        worker.join()
        part.finish()
        return "FINISHED"

    worker = threading.Thread(target=run, daemon=True)
    serve({
        "state": lambda args: state_line(),
        "finish": finish,
    }, ready=worker.start)
    stop.set()
    worker.join()


def serve_writer(client):
    def create(args):
        flags = [a for a in args if a.startswith("-")]
        rest = [a for a in args if not a.startswith("-")]
        value = rest[1].encode() if len(rest) > 1 else b""
        return "CREATED " + client.create(rest[0], value, ephemeral="-ephemeral" in flags,
                                          sequence="-sequence" in flags, makepath=True)

    def delete(args):
        client.delete(args[0])
        return "DELETED"

    serve({
        "create": create,
        "set": lambda args: "SET %d" % client.set(args[0], args[1].encode()).version,
        "delete": delete,
        "session": lambda args: "SESSION %x" % client.client_id[0],
    })


def serve_lease(client):
    def clock(args):
        if not args:
            return datetime.datetime.utcnow
        now = datetime.datetime.strptime(args[0], "%Y-%m-%dT%H:%M:%S.%f")
        return lambda: now

    def lease(args):
        got = client.NonBlockingLease(args[0], datetime.timedelta(seconds=float(args[1])),
                                      identifier=args[2], utcnow=clock(args[3:]))
        return "LEASE %s" % bool(got)

    def multilease(args):
        got = client.MultiNonBlockingLease(int(args[0]), args[1],
                                           datetime.timedelta(seconds=float(args[2])),
                                           identifier=args[3], utcnow=clock(args[4:]))
        return "LEASE %s" % bool(got)

    serve({
        "lease": lease,
        "multilease": multilease,
        "raw": lambda args: "RAW " + client.get(args[0])[0].decode("utf-8"),
    })


def serve_barrier(client, path, kind, args):
    session = {"session": lambda args: "SESSION %x" % client.client_id[0]}
    if kind == "barrier":
        barrier = client.Barrier(path)

        def raise_(args):
            barrier.create()
            return "RAISED"

        serve(dict(session, **{
            "set": raise_,
            "remove": lambda args: "REMOVED %s" % barrier.remove(),
            "wait": lambda args: "PASSED" if barrier.wait(timeout_arg(args)) else "TIMEOUT",
        }))
        return
    barrier = client.DoubleBarrier(path, int(args[0]))

    def enter(args):
        barrier.enter()
        return "ENTERED %s" % barrier.participating

    def leave(args):
        barrier.leave()
        return "LEFT"

    serve(dict(session, enter=enter, leave=leave))


if __name__ == "__main__":
    main()
