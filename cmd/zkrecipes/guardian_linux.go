//go:build linux

package main

// The guardian: CMD's tree must die with zkrecipes, whatever kills it.
//
// zkrecipes re-executes itself (/proc/self/exe, so an upgraded or deleted
// binary still works) with guardianArg, its pid and the session timeout in
// milliseconds as the first arguments. That process, the guardian, leads a
// new process group and starts CMD in it; everything CMD starts stays in
// the group unless it leaves on purpose. zkrecipes signals the group
// (kill(-pgid)); the guardian catches every signal and only checks, on
// each, whether zkrecipes is still its parent.
//
// CMD starts only on zkrecipes' word. The guardian sets itself up (signals
// caught, subreaper, CMD looked up in PATH), says "ready" over a socket
// pair shared with zkrecipes and waits. zkrecipes looks at the hold right
// then: held, it sends a start byte; lost, or a terminating signal came,
// it sends abort and the guardian exits with CMD never run. The guardian
// starts CMD and says "run" (or "fail CODE why" when the exec fails:
// 127 not found, 126 otherwise). zkrecipes signals the group only after
// "run", holding back what came since start (a loss: SIGTERM), so every
// signal it sends finds CMD there; a signal someone else sends the group
// before CMD exists is dropped. A terminating signal (INT, TERM, HUP,
// QUIT) the guardian gets while it waits, from the terminal whose
// foreground group it leads, it reports ("signal N"): zkrecipes then
// aborts as if it had got it.
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
// ("stop N", "exit N", "killed N" when signal N ended CMD, "fail why") and stays until zkrecipes kills the
// group; zkrecipes reaps it last, so the group's number stays theirs for
// every signal zkrecipes sends.
//
// zkrecipes can also stop without dying (SIGSTOP, a debugger, a frozen
// cgroup): its session's heartbeats stop, the server expires the session
// after the negotiated timeout T and another participant takes the hold,
// while CMD runs on. So once CMD runs zkrecipes sends a byte over the
// socket every T/10, and the guardian kills the group (SIGKILL, as above)
// when it has heard nothing for T/2: before the server, which needs T of
// silence, can give the hold to anyone else. The silence is counted only
// while the guardian itself runs and CMD is not stopped by job control:
//   - Ctrl-Z (SIGTSTP, or SIGTTIN, SIGTTOU) stops CMD's group, but not
//     the guardian, which catches them; cmdStopped then stops zkrecipes.
//     While CMD is so stopped the guardian does not count; it starts
//     again from zero when CMD continues (WCONTINUED), so a job stopped
//     for long is continued, and zkrecipes, continued first by fg, gets
//     T/2 to beat again (or to see the hold lost and SIGTERM the group).
//   - The guardian can be stopped too (SIGSTOP to the group): it starts
//     again from zero when it gets SIGCONT, giving zkrecipes, which may
//     be continued a moment later, its T/2.
// Stopped CMD or not, the hold itself does not wait: a job stopped for
// longer than T loses it (cmdStopped).
//
// Limits: a process that leaves the group (setsid, setpgid: daemons do)
// is neither signalled nor waited for; nor is it stopped by Ctrl-Z, and
// it runs on while the guardian waits for CMD to continue. The guardian
// itself can be killed alone (SIGKILL to its pid): CMD then gets SIGKILL
// (PR_SET_PDEATHSIG again) and zkrecipes kills the rest of the group, but
// if zkrecipes dies at the same moment, CMD's descendants live on.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// guardianArg, as the first argument, makes zkrecipes the guardian.
const guardianArg = "--zkrecipes-guardian"

const prSetChildSubreaper = 36 // PR_SET_CHILD_SUBREAPER, not in package syscall

// runGuardianIfAsked runs the guardian, and exits, when this process was
// started as one. main calls it before anything else.
func runGuardianIfAsked() {
	if len(os.Args) > 4 && os.Args[1] == guardianArg {
		os.Exit(guardian(os.Args[2], os.Args[3], os.Args[4:]))
	}
}

// Bytes from zkrecipes to the guardian.
const (
	ctlStart = 's' // start CMD: the hold is held
	ctlAbort = 'a' // do not start CMD
	ctlBeat  = '.' // zkrecipes runs (heartbeat)
)

// guardian runs cmdArgs in its own process group and kills the group when
// its parent, whose pid is parent, is gone or silent for half of the
// session timeout (timeoutMs, 0 for no heartbeat). The socket to the
// parent is fd 3.
func guardian(parent, timeoutMs string, cmdArgs []string) int {
	sigc := make(chan os.Signal, 64)
	signal.Notify(sigc) // every signal: those sent to the group are CMD's; caught ones are reset for CMD at exec
	ppid, err := strconv.Atoi(parent)
	ms, err2 := strconv.Atoi(timeoutMs)
	ctl := os.NewFile(3, "zkrecipes")
	if err != nil || err2 != nil || ctl == nil || os.Getppid() != ppid {
		return exitFailure // not started by runUnder, or zkrecipes is gone already: nothing started
	}
	syscall.CloseOnExec(3)
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0)

	// CMD's PR_SET_PDEATHSIG fires when this thread ends: the thread that
	// runs main lives as long as the process once locked.
	runtime.LockOSThread()
	cmd := exec.Command(cmdArgs[0], cmdArgs[1:]...) // looks CMD up in PATH: before ready, so that start is quick
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // if the guardian alone is killed

	var beats beatClock
	first, gone := make(chan byte, 1), make(chan struct{})
	go func() {
		defer close(gone) // zkrecipes' end is closed: it is gone
		buf := make([]byte, 64)
		for started := false; ; {
			n, err := ctl.Read(buf)
			if n > 0 {
				beats.beat()
				if !started {
					started = true
					first <- buf[0]
				}
			}
			if err != nil {
				return
			}
		}
	}()
	tick := time.NewTicker(250 * time.Millisecond)
	fmt.Fprintf(ctl, "ready\n")
	for run := false; !run; {
		select {
		case b := <-first:
			if b != ctlStart {
				return exitFailure // the hold is over, or zkrecipes was told to stop: CMD never runs
			}
			run = true
		case sig := <-sigc:
			switch sig {
			case syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT: // the terminal's, most likely: zkrecipes decides
				fmt.Fprintf(ctl, "signal %d\n", int(sig.(syscall.Signal)))
			}
		case <-tick.C:
		case <-gone:
			return exitFailure
		}
		if os.Getppid() != ppid {
			return exitFailure
		}
	}
	// zkrecipes signals the group only once it reads "run": a signal that
	// comes now is someone else's, sent before CMD existed.
	if err := cmd.Start(); err != nil {
		code, why := cannotRun(cmdArgs[0], err)
		fmt.Fprintf(ctl, "fail %d %s\n", code, why)
		return code
	}
	fmt.Fprintf(ctl, "run\n")

	silence := time.Duration(ms) * time.Millisecond / 2
	if silence > 0 && silence/5 < 250*time.Millisecond {
		tick.Reset(silence / 5)
	}
	beats.beat()
	for {
		if reapChildren(cmd.Process.Pid, ctl) {
			beats.beat() // CMD continued: the silence counts from now
		}
		select {
		case sig := <-sigc:
			if sig == syscall.SIGCONT {
				beats.beat() // the guardian itself may have been stopped: zkrecipes gets its time
			}
			if sig == syscall.SIGCHLD || os.Getppid() == ppid {
				continue
			}
		case <-tick.C:
			if os.Getppid() != ppid {
				break
			}
			if silence <= 0 || cmdJobStopped || beats.since() < silence {
				continue
			}
			fmt.Fprintf(os.Stderr, "zkrecipes: no heartbeat from zkrecipes (pid %d) for %v: killing %s and its process group\n", ppid, beats.since().Round(time.Millisecond), cmdArgs[0])
		case <-gone:
		}
		_ = syscall.Kill(0, syscall.SIGKILL) // zkrecipes is gone or stuck: the whole group, the guardian too
		return exitFailure
	}
}

// beatClock is when zkrecipes was last heard of, on the monotonic clock.
type beatClock struct{ last atomic.Int64 }

var guardianEpoch = time.Now()

func (b *beatClock) beat() { b.last.Store(int64(time.Since(guardianEpoch))) }
func (b *beatClock) since() time.Duration {
	return time.Since(guardianEpoch) - time.Duration(b.last.Load())
}

// cannotRun is the exit status and message for CMD that could not be
// executed: 127 when it (or its script's interpreter) is not found, 126
// otherwise, as a shell says.
func cannotRun(name string, err error) (int, string) {
	code, why := exitCannotRun, err.Error()
	var errno syscall.Errno
	if errors.As(err, &errno) {
		why = errno.Error()
	}
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, syscall.ENOENT) {
		code = exitNotFound
	}
	return code, strings.ReplaceAll(fmt.Sprintf("%s: cannot run: %s", name, why), "\n", " ")
}

// cmdJobStopped is whether job control (SIGTSTP, SIGTTIN, SIGTTOU)
// stopped CMD and it has not continued: then zkrecipes' silence does not
// count (cmdStopped stops zkrecipes too). Only the guardian's main
// goroutine uses it.
var cmdJobStopped bool

// reapChildren reaps the guardian's children without waiting: CMD, whose
// stops and end it reports, and CMD's orphans. It reports whether CMD
// continued after a stop.
func reapChildren(pid int, ctl io.Writer) (continued bool) {
	for {
		var ws syscall.WaitStatus
		wpid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG|syscall.WUNTRACED|syscall.WCONTINUED, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if wpid <= 0 {
			return continued
		}
		if wpid != pid {
			continue
		}
		switch {
		case ws.Continued():
			cmdJobStopped, continued = false, true
		case ws.Stopped():
			switch ws.StopSignal() {
			case syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU:
				cmdJobStopped = true
			}
			fmt.Fprintf(ctl, "stop %d\n", int(ws.StopSignal()))
		case ws.Exited():
			fmt.Fprintf(ctl, "exit %d\n", ws.ExitStatus())
		case ws.Signaled():
			fmt.Fprintf(ctl, "killed %d\n", int(ws.Signal())) // not "exit 128+n": zkrecipes may die of it (diesOfSignal)
		}
	}
}

// startGroup starts the guardian, which starts CMD in the guardian's new
// process group once told to. With a terminal fd (tty >= 0) the group is
// made the terminal's foreground group before the guardian runs. Once CMD
// is started zkrecipes beats every tenth of the session timeout.
func startGroup(cmdArgs, env []string, stdin io.Reader, stdout, stderr io.Writer, tty int, session time.Duration) (*cmdGroup, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socket pair for the guardian: %w", err)
	}
	_ = syscall.SetNonblock(fds[0], true) // so that closing it ends a pending read
	ours, theirs := os.NewFile(uintptr(fds[0]), "guardian"), os.NewFile(uintptr(fds[1]), "zkrecipes")
	defer theirs.Close()

	g := exec.Command("/proc/self/exe", append([]string{guardianArg, strconv.Itoa(os.Getpid()), strconv.FormatInt(session.Milliseconds(), 10)}, cmdArgs...)...)
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
		start: func(run bool) {
			if !run {
				_, _ = ours.Write([]byte{ctlAbort})
				return
			}
			_, _ = ours.Write([]byte{ctlStart})
			if session <= 0 {
				return
			}
			go func() {
				t := time.NewTicker(session / 10)
				defer t.Stop()
				for {
					select {
					case <-t.C:
						_, _ = ours.Write([]byte{ctlBeat})
					case <-quit:
						return
					}
				}
			}()
		},
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
	arg, why, _ := bytes.Cut(rest, []byte(" "))
	n, err := strconv.Atoi(string(arg))
	switch {
	case string(word) == "ready":
		return groupEvent{ready: true}, true
	case string(word) == "run":
		return groupEvent{started: true}, true
	case err != nil:
		return groupEvent{}, false
	case string(word) == "fail":
		return groupEvent{ended: true, status: &exitError{code: n, msg: string(why)}}, true
	case string(word) == "signal":
		return groupEvent{signal: syscall.Signal(n)}, true
	case string(word) == "stop":
		return groupEvent{stopped: syscall.Signal(n)}, true
	case string(word) == "exit" && n == 0:
		return groupEvent{ended: true}, true
	case string(word) == "exit":
		return groupEvent{ended: true, status: &exitError{code: n}}, true
	case string(word) == "killed":
		return groupEvent{ended: true, status: &signalExit{sig: syscall.Signal(n)}}, true
	}
	return groupEvent{}, false
}

// running reports whether a process of the group other than the guardian
// is still alive. Zombies do not count: they run nothing, and whether
// they are reaped soon depends on their parent. A process whose main
// thread has ended shows as a zombie but may still run other threads:
// it counts (procRuns).
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
		if st, err := readProcStat(pid); err == nil && st.pgrp == g.pgid && procRuns(pid, st) {
			return true
		}
	}
	return false
}

// procRuns reports whether process pid, whose stat is st, runs: it is not
// a zombie, or one of its threads is not (/proc/PID/task/TID/stat).
func procRuns(pid int, st procStat) bool {
	if st.state != 'Z' && st.state != 'X' {
		return true
	}
	tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/[0-9]*/stat")
	for _, task := range tasks {
		b, err := os.ReadFile(task)
		i := bytes.LastIndexByte(b, ')')
		if err == nil && i >= 0 && i+2 < len(b) && b[i+2] != 'Z' && b[i+2] != 'X' {
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
