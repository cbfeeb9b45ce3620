package main

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/recipes/layout"
	"github.com/zkrecipes/zkrecipes/recipes/queue"
	sharedrecipe "github.com/zkrecipes/zkrecipes/recipes/shared"
)

// lookSemaphore reads the semaphore at v.Path: its leases, who is in line
// to add leases (the locks mutex), and its maximum when known.
//
// Who waits: only the holder of the locks mutex adds lease nodes, and it
// holds the mutex until it has all it asked for. So the leases made in its
// session since its lock node (czxid above that node's) are its own — an
// earlier acquirer of another session may have added some while it was in
// line, and released the mutex only once granted them — and only
// the newest of them can be waiting — when there are more leases than the
// maximum; without a known maximum it may be granted or waiting
// ("pending"). Every other lease is held, even beyond the maximum (a
// shared count lowered since).
func lookSemaphore(ctx context.Context, r *reader, v *view, o lookOptions, tolerate bool) error {
	leasesDir, locksDir := path.Join(v.Path, "leases"), path.Join(v.Path, "locks")
	leaseNames, err := childrenOrNone(ctx, r, leasesDir)
	if err != nil {
		return err
	}
	lockNames, err := childrenOrNone(ctx, r, locksDir)
	if err != nil {
		return err
	}
	leases := layout.Sort(leaseNames, func(k layout.Kind) bool { return k == layout.Lease })
	line := layout.Sort(lockNames, layout.MutexKinds)
	info := &semInfo{MaxSource: "set by each participant"}
	if o.countPath != "" {
		info.MaxSource = "shared count " + o.countPath
		data, _, err := r.get(ctx, o.countPath, true)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			info.MaxSource = fmt.Sprintf("shared count %s does not exist", o.countPath)
		case err != nil:
			return err
		default:
			if n, err := sharedrecipe.Int32.Decode(data); err != nil {
				info.MaxSource = fmt.Sprintf("shared count %s does not hold a 4-byte count (%d bytes)", o.countPath, len(data))
			} else {
				max := int(n)
				info.Max = &max
			}
		}
	}
	// The line to add leases: its first is acquiring.
	var acq []participant
	for i, c := range line {
		p := path.Join(locksDir, c.Name)
		role := "waiter"
		if i == 0 {
			role = "acquiring"
		}
		if o.brief && i > 0 {
			acq = append(acq, participant{Position: i, Role: role, Recipe: recipeName(famSemaphore, c.Kind), Kind: c.Kind.String(), Node: p, fam: famSemaphore})
			continue
		}
		data, st, err := readListed(ctx, r, p, tolerate)
		if err != nil {
			return err
		}
		if st == nil {
			continue // gone since the listing
		}
		acq = append(acq, newParticipant(p, famSemaphore, c.Kind, i, role, data, st, v.at))
	}
	var held []participant
	for i, c := range leases {
		p := path.Join(leasesDir, c.Name)
		newest := i == len(leases)-1
		if o.brief && !(newest && len(acq) > 0) {
			held = append(held, participant{Position: i, Role: "holder", Recipe: recipeName(famSemaphore, c.Kind), Kind: c.Kind.String(), Node: p, fam: famSemaphore})
			continue
		}
		data, st, err := readListed(ctx, r, p, tolerate)
		if err != nil {
			return err
		}
		if st == nil {
			continue // gone since the listing
		}
		lp := newParticipant(p, famSemaphore, c.Kind, i, "holder", data, st, v.at)
		if newest && len(acq) > 0 && acq[0].Role == "acquiring" && acq[0].fetched &&
			lp.Session == acq[0].Session && lp.Token > acq[0].Token {
			switch {
			case info.Max == nil:
				lp.Role = "pending"
			case len(leases) > *info.Max:
				lp.Role = "waiting"
			}
		}
		held = append(held, lp)
	}
	for _, p := range held {
		if p.Role == "holder" {
			info.Holders++
		}
	}
	info.Waiters = len(acq)
	if info.Max != nil && info.Holders > *info.Max {
		v.Notes = append(v.Notes, fmt.Sprintf("%d leases held, more than the maximum of %d: it was lowered since they were granted", info.Holders, *info.Max))
	}
	v.Semaphore = info
	v.Participants = append(v.Participants, held...)
	v.Participants = append(v.Participants, acq...)
	return nil
}

// childrenOrNone lists dir, none if it is missing (a container emptied).
func childrenOrNone(ctx context.Context, r *reader, dir string) ([]string, error) {
	kids, _, err := r.children(ctx, dir)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	return kids, err
}

// lookQueue reads the work queue at v.Path: its items in order, which are
// taken and by whom, and how many idle Go workers are in line; with brief
// only how many of each.
func lookQueue(ctx context.Context, r *reader, v *view, brief bool) error {
	entries, err := childrenOrNone(ctx, r, path.Join(v.Path, "entries"))
	if err != nil {
		return err
	}
	taken, err := childrenOrNone(ctx, r, path.Join(v.Path, "taken"))
	if err != nil {
		return err
	}
	line, err := childrenOrNone(ctx, r, path.Join(v.Path, "takers"))
	if err != nil {
		return err
	}
	if brief {
		for _, e := range entries {
			if strings.HasPrefix(e, "entry-") {
				v.items++
				if slices.Contains(taken, e) {
					v.taken++
				}
			}
		}
		v.idle = len(layout.Sort(line, layout.MutexKinds))
		return nil
	}
	// The listings above set the watches; the queue's own reading says
	// what its items are.
	q, err := queue.New(r.client, v.Path)
	if err != nil {
		return err
	}
	ents, err := q.Entries(ctx)
	if err != nil {
		return err
	}
	idle, err := q.Idle(ctx)
	if err != nil {
		return err
	}
	rows := make([]queueRow, len(ents))
	for i, e := range ents {
		rows[i] = queueRow{Position: i, State: "ready", Priority: e.Priority, Item: e.Name, Size: e.Size}
		if e.Taken {
			v.taken++
			rows[i].State, rows[i].Session, rows[i].Taker = "taken", fmt.Sprintf("%#x", e.Session), string(e.Taker)
		}
	}
	v.items, v.idle = len(rows), idle
	v.Queue, v.IdleWorkers = &rows, &v.idle
	return nil
}
