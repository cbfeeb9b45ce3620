package main

import (
	"fmt"
	"strings"
)

// exitDoc is one line of an "Exit status" section of the help.
type exitDoc struct {
	code, meaning string
	commands      string // the commands it applies to: names separated by "|", "" for all
}

var exitDocs = []exitDoc{
	{"CMD's", "CMD ran: its exit status (128+n if signal n ended it; if SIGINT or SIGQUIT did, zkrecipes dies of it too)", "lock|semaphore|elect|queue take|register|barrier enter"},
	{"0", "done; without CMD: held, then released after SIGINT or SIGTERM", "lock|semaphore|elect"},
	{"0", "done", "queue put|queue take|inspect"},
	{"0", "interrupted (SIGINT, SIGTERM): watching ends", "watch"},
	{"0", "interrupted (SIGINT, SIGTERM): serving ends", "exporter"},
	{"0", "done: the number is printed", "counter get|counter add|counter set"},
	{"0", "without CMD: registered, then unregistered after SIGINT or SIGTERM (losing the registration is not an error: it is made again)", "register"},
	{"0", "done; with --watch: interrupted (SIGINT, SIGTERM)", "discover"},
	{"0", "interrupted (SIGINT, SIGTERM): every server stopped", "dev"},
	{"0", "done (wait: the barrier is down; leave: no member is in)", "barrier set|barrier remove|barrier wait|barrier leave"},
	{"0", "without CMD: entered, and every member left", "barrier enter"},
	{"1", "another failure (a server error, a refused ACL); the message says why", ""},
	{"2", "bad flags or arguments (a bad connect string, a relative PATH)", ""},
	{"3", "--try: held by another participant (--conflict-exit-code N changes it)", "lock"},
	{"3", "--try: not that many free leases (--conflict-exit-code N changes it)", "semaphore"},
	{"3", "--try: no item available (--conflict-exit-code N changes it)", "queue take"},
	{"3", "not added: other participants' writes kept coming first until the tries ran out", "counter add"},
	{"3", "--expect N: the counter holds another number; nothing was set", "counter set"},
	{"4", "the hold was lost (while CMD ran, CMD was stopped)", "lock|semaphore|elect"},
	{"4", "the item was lost while CMD ran (CMD was stopped; the item goes to another worker)", "queue take"},
	{"4", "the membership was lost (the session ended): while waiting to enter, or while CMD ran and CMD succeeded", "barrier enter"},
	{"5", "cannot connect: no ZooKeeper session (every server refused, or --connect-timeout passed)", ""},
	{"6", "the answer was lost and the session ended (or Ctrl-C came) before the outcome could be read: it may or may not have applied", "counter add|counter set"},
	{"124", "--timeout passed before the hold was taken", "lock|semaphore|elect"},
	{"124", "--timeout passed before an item came", "queue take"},
	{"124", "--timeout passed before the instance was registered", "register"},
	{"124", "--timeout passed before the members had all entered", "barrier enter"},
	{"124", "--timeout passed first (the barrier still up; members still in)", "barrier wait|barrier leave"},
	{"126", "CMD cannot be run (not an executable file)", "lock|semaphore|elect|queue take|register|barrier enter"},
	{"127", "CMD was not found", "lock|semaphore|elect|queue take|register|barrier enter"},
	{"128+n", "signal n ended the wait: 130 for SIGINT (Ctrl-C: zkrecipes dies of it), 143 for SIGTERM", "lock|semaphore|elect|queue take|queue put|counter get|counter add|counter set|register|barrier set|barrier remove|barrier wait|barrier enter|barrier leave"},
}

// exitNotFor names the commands that a status of every command (commands
// "") does not apply to: dev connects to no server.
var exitNotFor = map[string]string{"5": "dev"}

// exitHelp is the "Exit status" section of a command's help ("" for a
// command with none of its own, such as demo).
func exitHelp(command string) string {
	switch command {
	case "lock", "semaphore", "elect", "queue take", "queue put", "inspect", "watch", "exporter", "counter get", "counter add", "counter set", "register", "discover",
		"barrier set", "barrier remove", "barrier wait", "barrier enter", "barrier leave", "dev":
	default:
		return ""
	}
	var b strings.Builder
	b.WriteString("Exit status:\n")
	for _, d := range exitDocs {
		if d.commands == "" && !containsWord(exitNotFor[d.code], command) || containsWord(d.commands, command) {
			fmt.Fprintf(&b, "  %-6s %s\n", d.code, d.meaning)
		}
	}
	return b.String()
}

// exitSummary is the table of all exit statuses, for the top-level usage.
const exitSummary = `Exit status (each command's --help says which apply to it):
  0      done (lock, semaphore, elect, register without CMD: released after SIGINT or SIGTERM)
  1      another failure; the message says why
  2      bad flags or arguments
  3      --try: held by another / no free lease / no item (--conflict-exit-code N changes it);
         counter: not written (set --expect found another number, add's tries ran out)
  4      the hold (or the taken item) was lost
  5      cannot connect to ZooKeeper
  6      counter: a write's outcome is unknown (its answer was lost with its session)
  124    --timeout passed first
  126    CMD cannot be run
  127    CMD was not found
  128+n  signal n ended the wait (130: Ctrl-C, 143: SIGTERM)
  When CMD runs, zkrecipes exits with CMD's status. After Ctrl-C (SIGINT),
  and when CMD died of SIGQUIT, zkrecipes dies of the signal itself once it
  has released, so that a calling shell script stops as it would for CMD.
`

func containsWord(list, word string) bool {
	for _, w := range strings.Split(list, "|") {
		if w == word {
			return true
		}
	}
	return false
}
