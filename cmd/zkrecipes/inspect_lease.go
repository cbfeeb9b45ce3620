package main

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/recipes/layout"
	"github.com/zkrecipes/zkrecipes/recipes/lease"
)

// A lease (recipes/lease, Kazoo's NonBlockingLease) is told by its record
// node, lease_holder; the Kazoo lock nodes beside it are takers deciding,
// part of the lease, not a mutex of their own.
const famLease family = 103

func init() {
	kindOf[famLease], nameOf[famLease] = "lease", "lease"
}

// leaseInfo is a lease's record in inspect's JSON.
type leaseInfo struct {
	Holder  string     `json:"holder,omitempty"`
	End     *time.Time `json:"end,omitempty"`
	Expired bool       `json:"expired"` // by inspect's clock
	Error   string     `json:"error,omitempty"`
	Taking  int        `json:"taking"` // takers holding or waiting for the lock that decides
}

// isLease reports whether kids, a node's children, hold a lease's record.
func isLease(kids []string) bool { return slices.Contains(kids, lease.HolderNode) }

// lookLease reads the lease at v.Path: its record (watched with --watch)
// and the takers deciding, if any.
func lookLease(ctx context.Context, r *reader, v *view, takers []layout.Contender) error {
	data, _, err := r.get(ctx, path.Join(v.Path, lease.HolderNode), true)
	if errors.Is(err, zk.ErrNoNode) {
		return errMoved
	}
	if err != nil {
		return err
	}
	info := &leaseInfo{Taking: len(takers)}
	rec, err := lease.ParseRecord(data)
	if err != nil {
		info.Error = err.Error()
	} else {
		info.Holder, info.End, info.Expired = rec.Holder, &rec.End, !v.at.Before(rec.End)
	}
	v.Lease = info
	for i, c := range takers {
		v.Participants = append(v.Participants, participant{Position: i, Role: "taker", Recipe: "lease taker", Kind: c.Kind.String(), Node: path.Join(v.Path, c.Name), fam: famLease})
	}
	return nil
}

// leaseStateText is a lease's state in a line.
func leaseStateText(l *leaseInfo, at time.Time) string {
	switch {
	case l.Error != "":
		return "unreadable record: " + l.Error
	case l.Expired:
		return fmt.Sprintf("free (%q's lease ended %s ago)", l.Holder, at.Sub(*l.End).Round(time.Second))
	}
	return fmt.Sprintf("held by %q until %s (%s left)", l.Holder, l.End.Format(time.RFC3339), l.End.Sub(at).Round(time.Second))
}
