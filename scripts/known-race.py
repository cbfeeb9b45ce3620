#!/usr/bin/env python3
"""Reads `go test` output on stdin and prints the packages that failed only
because the race detector saw one of two races inside go-zookeeper v1.0.4
itself, not in this module:

- it reads its last zxid while re-registering watches on a reconnect
  (sendSetWatches) as its receive loop writes it (recvLoop):
  go-zookeeper/zk#35, open;
- a call returns ErrConnectionClosed when its handle is closed
  (`request` gives up on shouldQuit) while the receive loop still decodes
  the call's late answer into the response the call then reads (the
  call's own frame reads it: `return res.Path, err`; the caller gets the
  error and never the value).

Exits 1, printing nothing, if any package failed for any other reason."""
import re
import sys

def functions(stack):
    """The function lines of one goroutine's stack, innermost first."""
    return [l.strip() for l in stack.splitlines()
            if l.strip() and not l.startswith(("      ", "\t")) and "(" in l and not l.strip().startswith("/")]


def known(block):
    frames = [l.strip() for l in block.splitlines() if "(*Conn)." in l or "zkrecipes" in l]
    if (any("zk.(*Conn).recvLoop" in f for f in frames)
            and any("zk.(*Conn).sendSetWatches" in f for f in frames)):
        return True
    # The late answer decoded into the response of a call that gave up.
    parts = re.split(r"\n(?:Previous )?(?:[Rr]ead|[Ww]rite) at .*\n", "\n" + block)
    if len(parts) < 3:
        return False
    first, second = functions(parts[1]), functions(parts[2].split("\n\nGoroutine")[0])
    decoder = any("zk.decodePacket" in f for f in first) and any("zk.(*Conn).recvLoop" in f for f in first)
    caller = next((f for f in second if not f.startswith("reflect.")), "")
    return decoder and caller.startswith("github.com/go-zookeeper/zk.(*Conn).")

chunk, failed = [], []
for line in sys.stdin:
    chunk.append(line)
    m = re.match(r"^(ok|FAIL|---|\?)\s+(\S+)", line)
    if not m or m.group(1) in ("---",) or line.startswith("--- FAIL"):
        continue
    if m.group(1) == "FAIL" and m.group(2) != "":
        text = "".join(chunk)
        races = re.findall(r"WARNING: DATA RACE\n(.*?)\n==================", text, re.S)
        fails = len(re.findall(r"^\s*--- FAIL", text, re.M))
        race_fails = len(re.findall(r"race detected during execution of test", text))
        if (not races or not all(known(r) for r in races) or fails != race_fails
                or "panic:" in text or "build failed" in text):
            sys.exit(1)
        failed.append(m.group(2))
    chunk = []
print(" ".join(failed))
