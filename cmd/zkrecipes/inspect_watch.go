package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
)

// watchInspect prints the view of o.path, then what changes in it, until
// ctx ends (which is no error). Each reading sets a child watch on every
// directory it lists (the path, a semaphore's leases and locks, a queue's
// directories, a listing's directories), or a creation watch on a missing
// path; when any of them fires, it reads again and prints the difference.
// A change between two readings that is undone before the second is not
// seen: watches are one-shot, and the reading is what is compared.
func watchInspect(ctx context.Context, client *connection.Client, o inspectOptions, out io.Writer) error {
	var last []fact
	for first := true; ; first = false {
		r := &reader{client: client, watch: true}
		v, err := inspectPath(ctx, r, o)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		facts := factsOf(v)
		changes := diff(last, facts)
		last = facts
		switch {
		case o.json && (first || len(changes) > 0):
			line := struct {
				Time time.Time `json:"time"`
				view
				Changes []change `json:"changes,omitempty"`
			}{v.at, *v, changes}
			if err := json.NewEncoder(out).Encode(line); err != nil {
				return err
			}
		case first:
			if err := writeView(out, v); err != nil {
				return err
			}
		default:
			stamp := v.at.Format("15:04:05.000")
			for _, c := range changes {
				if _, err := fmt.Fprintf(out, "%s %s\n", stamp, c); err != nil {
					return err
				}
			}
		}
		if !waitAny(ctx, r.watches) {
			return nil
		}
	}
}

// waitAny waits until one of ws fires, or ctx ends (false). It costs no
// goroutine while it waits: each watch signals through AfterFunc, and
// stops to when it returns.
func waitAny(ctx context.Context, ws []*connection.Watch) bool {
	wake := make(chan struct{}, 1)
	stops := make([]func() bool, 0, len(ws))
	for _, w := range ws {
		stops = append(stops, w.AfterFunc(func(zk.Event) {
			select {
			case wake <- struct{}{}:
			default:
			}
		}))
	}
	defer func() {
		for _, stop := range stops {
			stop()
		}
	}()
	select {
	case <-wake:
		return true
	case <-ctx.Done():
		return false
	}
}

// fact is one thing a view says, compared from one reading to the next:
// a node and its role and data, a queue's item, a listing's line, or an
// attribute of the path (its kind, a semaphore's max, a warning).
type fact struct {
	key    string // a node's or a line's path; an attribute's name
	what   string // a role, an item's state, a line's kind
	detail string // data, or a line's holders and waiters
	attr   bool
}

// change is a difference between two readings.
type change struct {
	Op     string `json:"op"` // "+", "-", "now" (what changed), "~" (detail changed)
	What   string `json:"what,omitempty"`
	Key    string `json:"key"`
	Detail string `json:"detail,omitempty"`
	Was    string `json:"was,omitempty"` // with "now": the role, state or value before
}

func (c change) String() string {
	if strings.HasPrefix(c.Key, "warning: ") {
		return c.Op + " " + c.Key
	}
	if c.What == "" || c.What == c.Key { // an attribute
		switch c.Op {
		case "-":
			return "- " + c.Key
		case "+":
			return c.Key + " now " + c.Detail
		}
		return fmt.Sprintf("%s now %s (was %s)", c.Key, c.Detail, c.Was)
	}
	s := strings.TrimSpace(c.What + " " + c.Key + " " + c.Detail)
	switch c.Op {
	case "now":
		return fmt.Sprintf("%s now %s (was %s)", c.What, strings.TrimSpace(c.Key+" "+c.Detail), c.Was)
	case "-":
		return "- " + c.What + " " + c.Key
	}
	return c.Op + " " + s
}

// factsOf lists what a view says that --watch follows: not ages, which
// change at every reading.
func factsOf(v *view) []fact {
	kind := v.Kind
	if len(v.Kinds) > 0 {
		kind += " (" + strings.Join(v.Kinds, ", ") + ")"
	}
	fs := []fact{{key: "kind", what: "kind", detail: kind, attr: true}}
	if v.Semaphore != nil {
		fs = append(fs, fact{key: "max", what: "max", detail: maxText(v.Semaphore), attr: true})
	}
	if v.Counter != nil {
		fs = append(fs, fact{key: "value", what: "value", detail: counterValueText(v.Counter), attr: true})
	}
	if v.Barrier != nil {
		state := "closed"
		if v.Barrier.Open {
			state = "open"
		}
		fs = append(fs, fact{key: "barrier", what: "barrier", detail: state, attr: true})
	}
	for _, w := range v.Warnings {
		fs = append(fs, fact{key: "warning: " + w})
	}
	for _, p := range v.Participants {
		fs = append(fs, fact{key: p.Node, what: p.Role, detail: dataText(p.Data)})
	}
	if v.Queue != nil {
		for _, q := range *v.Queue {
			fs = append(fs, fact{key: path.Join(v.Path, "entries", q.Item), what: q.State, detail: dataText(q.Taker)})
		}
		fs = append(fs, fact{key: "idle workers", what: "idle workers", detail: fmt.Sprint(v.idle), attr: true})
	}
	if v.Partition != nil {
		for _, r := range v.Partition.Items {
			d := "free"
			if r.Node != "" {
				d = fmt.Sprintf("%s, token %d, %d waiting", dataText(r.Holder), r.Token, r.Waiting)
			}
			fs = append(fs, fact{key: path.Join(v.Path, "locks", r.Item), what: "item", detail: d})
		}
	}
	if v.Recipes != nil {
		for _, r := range *v.Recipes {
			d := fmt.Sprintf("%d holding, %s waiting", r.Holders, waitersText(r.Waiters))
			if r.Holder != "" || r.HolderSession != "" {
				d += fmt.Sprintf("; holder %s (session %s)", dataText(r.Holder), r.HolderSession)
			}
			fs = append(fs, fact{key: r.Path, what: rowKindText(r), detail: d})
			for _, w := range r.Warnings {
				fs = append(fs, fact{key: "warning: " + w})
			}
		}
	}
	return fs
}

// diff says what changed from old to new: what went first, then what
// came or changed, in new's order. Nothing when old is nil (the first
// reading).
func diff(old, new []fact) []change {
	if old == nil {
		return nil
	}
	was := make(map[string]fact, len(old))
	for _, f := range old {
		was[f.key] = f
	}
	is := make(map[string]bool, len(new))
	for _, f := range new {
		is[f.key] = true
	}
	var out []change
	for _, f := range old {
		if !is[f.key] {
			out = append(out, change{Op: "-", What: f.what, Key: f.key})
		}
	}
	for _, f := range new {
		o, ok := was[f.key]
		switch {
		case !ok:
			out = append(out, change{Op: "+", What: f.what, Key: f.key, Detail: f.detail})
		case f.attr && o.detail != f.detail:
			out = append(out, change{Op: "now", What: f.what, Key: f.key, Detail: f.detail, Was: o.detail})
		case o.what != f.what:
			out = append(out, change{Op: "now", What: f.what, Key: f.key, Detail: f.detail, Was: o.what})
		case o.detail != f.detail:
			out = append(out, change{Op: "~", What: f.what, Key: f.key, Detail: f.detail})
		}
	}
	return out
}
