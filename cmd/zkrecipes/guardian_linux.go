//go:build linux

package main

// The guardian: CMD's tree must die with zkrecipes, whatever kills it.
//
// zkrecipes re-executes itself (/proc/self/exe, so an upgraded or deleted
// binary still works) with guardianArg as the first argument. That
// process, the guardian, leads a new process group and starts CMD in it;
// everything CMD starts stays in the group unless it leaves on purpose.
// zkrecipes signals the group (kill(-pgid)); the guardian catches every
// signal and only checks, on each, whether zkrecipes is still its parent.
//
// When zkrecipes dies, even by SIGKILL, the guardian notices at once, in
// three ways: its end of a socket pair shared with zkrecipes reads EOF
// (the kernel closes zkrecipes' end), it gets SIGTERM (PR_SET_PDEATHSIG),
// and its parent changes (checked on every signal and every 250 ms).
// It then sends SIGKILL to the whole group, itself included. Not SIGTERM
// with a grace: with zkrecipes gone nobody watches the hold any more, the
// session can expire after the negotiated timeout (as little as a few
// hundred milliseconds) and the next holder can start; only an immediate
// kill is sure to come before that. So CMD gets no chance to clean up when
// zkrecipes itself is killed; zkrecipes' own SIGTERM is passed on as usual.
//
// PR_SET_PDEATHSIG fires when the *thread* that forked the guardian ends,
// not only the process (https://go.dev/issue/27505). That is why the
// guardian acts on a signal only when getppid() has changed: a spurious
// signal from a thread's end is ignored, and the kernel signals again on
// the process's end. The socket's EOF needs no such care.
//
// The guardian is also a child subreaper (PR_SET_CHILD_SUBREAPER), so
// CMD's orphans become its children and it reaps them: no zombie of the
// group waits for an init that may never reap (zkrecipes as PID 1 in a
// container). It reports CMD's stops and end to zkrecipes over the socket
// ("stop N", "exit N", "fail why") and stays until zkrecipes kills the
// group; zkrecipes reaps it last, so the group's number stays theirs for
// every signal zkrecipes sends.
//
// Limits: a process that leaves the group (setsid, setpgid: daemons do)
// is neither signalled nor waited for. The guardian itself can be killed
// alone (SIGKILL to its pid): CMD then gets SIGKILL (PR_SET_PDEATHSIG
// again) and zkrecipes kills the rest of the group, but if zkrecipes dies
// at the same moment, CMD's descendants live on. SIGSTOP of zkrecipes
// stops its session's heartbeats without stopping CMD.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// guardianArg, as the first argument, makes zkrecipes the guardian.
const guardianArg = "--zkrecipes-guardian"

const prSetChildSubreaper = 36 // PR_SET_CHILD_SUBREAPER, not in package syscall

// runGuardianIfAsked runs the guardian, and exits, when this process was
// started as one. main calls it before anything else.
func runGuardianIfAsked() {
	if len(os.Args) > 3 && os.Args[1] == guardianArg {
		os.Exit(guardian(os.Args[2], os.Args[3:]))
	}
}

// guardian runs cmdArgs in its own process group and kills the group when
// its parent, whose pid is parent, is gone. The socket to the parent is fd 3.
func guardian(parent string, cmdArgs []string) int {
	sigc := make(chan os.Signal, 64)
	signal.Notify(sigc) // every signal: those sent to the group are CMD's; caught ones are reset for CMD at exec
	ppid, err := strconv.Atoi(parent)
	ctl := os.NewFile(3, "zkrecipes")
	if err != nil || ctl == nil || os.Getppid() != ppid {
		return exitFailure // not started by runUnder, or zkrecipes is gone already: nothing started
	}
	syscall.CloseOnExec(3)
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0)

	// CMD's PR_SET_PDEATHSIG fires when this thread ends: the thread that
	// runs main lives as long as the process once locked.
	runtime.LockOSThread()
	cmd := exec.Command(cmdArgs[0], cmdArgs[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // if the guardian alone is killed
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(ctl, "fail %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
		return exitCannotRun
	}
	gone := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, ctl) // returns when zkrecipes' end is closed: it is gone
		close(gone)
	}()
	tick := time.NewTicker(250 * time.Millisecond)
	for {
		reapChildren(cmd.Process.Pid, ctl)
		select {
		case sig := <-sigc:
			if sig == syscall.SIGCHLD || os.Getppid() == ppid {
				continue
			}
		case <-tick.C:
			if os.Getppid() == ppid {
				continue
			}
		case <-gone:
		}
		_ = syscall.Kill(0, syscall.SIGKILL) // zkrecipes is gone: the whole group, the guardian too
		return exitFailure
	}
}

// reapChildren reaps the guardian's children without waiting: CMD, whose
// stops and end it reports, and CMD's orphans.
func reapChildren(pid int, ctl io.Writer) {
	for {
		var ws syscall.WaitStatus
		wpid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG|syscall.WUNTRACED, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if wpid <= 0 {
			return
		}
		if wpid != pid {
			continue
		}
		switch {
		case ws.Stopped():
			fmt.Fprintf(ctl, "stop %d\n", int(ws.StopSignal()))
		case ws.Exited():
			fmt.Fprintf(ctl, "exit %d\n", ws.ExitStatus())
		case ws.Signaled():
			fmt.Fprintf(ctl, "signal %d\n", int(ws.Signal())) // not "exit 128+n": zkrecipes may die of it (diesOfSignal)
		}
	}
}

// startGroup starts the guardian, which starts CMD in the guardian's new
// process group. With a terminal fd (tty >= 0) the group is made the
// terminal's foreground group before the guardian runs.
func startGroup(cmdArgs, env []string, stdin io.Reader, stdout, stderr io.Writer, tty int) (*cmdGroup, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socket pair for the guardian: %w", err)
	}
	_ = syscall.SetNonblock(fds[0], true) // so that closing it ends a pending read
	ours, theirs := os.NewFile(uintptr(fds[0]), "guardian"), os.NewFile(uintptr(fds[1]), "zkrecipes")
	defer theirs.Close()

	g := exec.Command("/proc/self/exe", append([]string{guardianArg, strconv.Itoa(os.Getpid())}, cmdArgs...)...)
	g.Args[0] = os.Args[0]
	g.Env = env
	g.Stdin, g.Stdout, g.Stderr = stdin, stdout, stderr
	g.ExtraFiles = []*os.File{theirs}
	g.WaitDelay = time.Second // do not wait for output copies that an escaped process keeps open
	g.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if tty >= 0 {
		g.SysProcAttr.Foreground, g.SysProcAttr.Ctty = true, tty
	}
	if err := g.Start(); err != nil {
		ours.Close()
		return nil, err
	}

	events, quit := make(chan groupEvent), make(chan struct{})
	go func() {
		defer close(events)
		sc := bufio.NewScanner(ours)
		for sc.Scan() {
			ev, ok := parseGuardianLine(sc.Bytes())
			if !ok {
				continue
			}
			select {
			case events <- ev:
			case <-quit:
				return
			}
		}
	}()
	return &cmdGroup{
		pgid:   g.Process.Pid,
		events: events,
		stop: func() {
			_ = g.Wait()
			close(quit)
			ours.Close()
			for range events {
			}
		},
	}, nil
}

// parseGuardianLine reads one of the guardian's reports.
func parseGuardianLine(line []byte) (groupEvent, bool) {
	word, rest, _ := bytes.Cut(line, []byte(" "))
	n, err := strconv.Atoi(string(rest))
	switch {
	case string(word) == "fail":
		return groupEvent{ended: true, status: errors.New(string(rest))}, true
	case err != nil:
		return groupEvent{}, false
	case string(word) == "stop":
		return groupEvent{stopped: syscall.Signal(n)}, true
	case string(word) == "exit" && n == 0:
		return groupEvent{ended: true}, true
	case string(word) == "exit":
		return groupEvent{ended: true, status: &exitError{code: n}}, true
	case string(word) == "signal":
		return groupEvent{ended: true, status: &signalExit{sig: syscall.Signal(n)}}, true
	}
	return groupEvent{}, false
}

// running reports whether a process of the group other than the guardian
// is still alive. Zombies do not count: they run nothing, and whether
// they are reaped soon depends on their parent.
func (g *cmdGroup) running() bool {
	if err := syscall.Kill(-g.pgid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	d, err := os.Open("/proc")
	if err != nil {
		return true
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return true
	}
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil || pid == g.pgid {
			continue
		}
		if st, err := readProcStat(pid); err == nil && st.pgrp == g.pgid && st.state != 'Z' && st.state != 'X' {
			return true
		}
	}
	return false
}

// procStat is what zkrecipes reads of /proc/PID/stat.
type procStat struct {
	state               byte
	ppid, pgrp, session int
}

func readProcStat(pid int) (procStat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, err
	}
	// pid (comm) state ppid pgrp session ...; comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: unexpected %q", pid, b)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 4 || len(f[0]) != 1 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: unexpected %q", pid, b)
	}
	st := procStat{state: f[0][0]}
	st.ppid, _ = strconv.Atoi(f[1])
	st.pgrp, _ = strconv.Atoi(f[2])
	st.session, _ = strconv.Atoi(f[3])
	return st, nil
}

// groupOrphaned reports whether zkrecipes' own process group is orphaned:
// no shell of its session does job control over it, so a stopped job
// would never be continued. It follows zkrecipes' ancestors while they
// are in its group: the first one outside the group decides.
func groupOrphaned() bool {
	self, err := readProcStat(os.Getpid())
	if err != nil {
		return true
	}
	pid := self.ppid
	for range 64 {
		if pid <= 1 {
			return true
		}
		st, err := readProcStat(pid)
		switch {
		case err != nil || st.session != self.session:
			return true
		case st.pgrp != self.pgrp:
			return false
		}
		pid = st.ppid
	}
	return true
}
