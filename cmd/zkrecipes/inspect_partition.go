package main

import (
	"context"
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/recipes/layout"
)

// Kazoo's party members: Party's "<32 hex>__party__" (the id in the
// data) and ShallowParty's "<32 hex>-<id>". A Curator GroupMember's nodes
// are named by the members' ids, like any node: inspect cannot tell such
// a group from a directory, and shows its members as ephemeral nodes.
var (
	partyNode   = regexp.MustCompile(`^[0-9a-f]{32}__party__$`)
	shallowNode = regexp.MustCompile(`^[0-9a-f]{32}-.`)
)

// isParty reports whether kids are all Kazoo party members' nodes, and of
// which layout.
func isParty(kids []string) (shallow, ok bool) {
	if len(kids) == 0 {
		return false, false
	}
	party, shal := true, true
	for _, k := range kids {
		party = party && partyNode.MatchString(k)
		shal = shal && shallowNode.MatchString(k)
	}
	return shal, party || shal
}

// isPartition reports whether kids are a Kazoo SetPartitioner's (and
// recipes/partition's): "party" and "locks".
func isPartition(kids []string) bool {
	return slices.Contains(kids, "party") && slices.Contains(kids, "locks")
}

// partInfo is a partition's summary in inspect's output.
type partInfo struct {
	Members int       `json:"members"`
	Items   []partRow `json:"items"`
	Held    int       `json:"held"`
}

// partRow is one item of a partition: its lock directory's holder.
type partRow struct {
	Item    string `json:"item"`
	Holder  string `json:"holder"` // the holding member's identifier, when its session is a member's
	Recipe  string `json:"recipe"` // zkrecipes partition, Kazoo partitioner
	Session string `json:"session"`
	Token   int64  `json:"fencing_token"`
	Node    string `json:"node"`
	Waiting int    `json:"waiting"`
}

// lookParty reads the members of a Kazoo party at v.Path.
func lookParty(ctx context.Context, r *reader, v *view, kids []string, shallow bool) (map[int64]string, error) {
	slices.Sort(kids)
	owners := map[int64]string{}
	for i, k := range kids {
		p := path.Join(v.Path, k)
		data, st, err := r.get(ctx, p, false)
		if errors.Is(err, zk.ErrNoNode) {
			continue // left while read
		}
		if err != nil {
			return nil, err
		}
		id := string(data)
		recipe := "Kazoo party member"
		if shallow {
			_, id, _ = strings.Cut(k, "-")
			recipe = "Kazoo shallow party member (or partitioner's)"
		}
		pt := newParticipant(p, famParty, layout.Unknown, i, "member", []byte(id), st, v.at)
		pt.Recipe, pt.Kind = recipe, "party-member"
		v.Participants = append(v.Participants, pt)
		owners[st.EphemeralOwner] = id
	}
	return owners, nil
}

// lookPartition reads a partition at v.Path: its party's members, and
// who holds each item's lock.
func lookPartition(ctx context.Context, r *reader, v *view, brief bool) error {
	partyDir, locksDir := path.Join(v.Path, "party"), path.Join(v.Path, "locks")
	members, err := childrenOrNone(ctx, r, partyDir)
	if err != nil {
		return err
	}
	pv := &view{Path: partyDir, at: v.at}
	owners, err := lookParty(ctx, r, pv, members, true)
	if err != nil {
		return err
	}
	for _, p := range pv.Participants {
		p.fam = famPartition
		v.Participants = append(v.Participants, p)
	}
	items, err := childrenOrNone(ctx, r, locksDir)
	if err != nil {
		return err
	}
	slices.Sort(items)
	info := &partInfo{Members: len(pv.Participants), Items: []partRow{}}
	for _, item := range items {
		dir := path.Join(locksDir, item)
		kids, err := childrenOrNone(ctx, r, dir)
		if err != nil {
			return err
		}
		cs := layout.Sort(kids, layout.MutexKinds)
		row := partRow{Item: item}
		if len(cs) > 0 {
			row.Waiting = len(cs) - 1
			row.Node = path.Join(dir, cs[0].Name)
			row.Recipe = "Kazoo partitioner"
			if strings.HasPrefix(cs[0].Name, "_c_") {
				row.Recipe = "zkrecipes partition"
			}
			info.Held++
			if !brief {
				_, st, err := r.get(ctx, row.Node, false)
				switch {
				case errors.Is(err, zk.ErrNoNode):
					row.Node, row.Recipe = "", "" // released while read
					info.Held--
				case err != nil:
					return err
				default:
					row.Session, row.Token = fmt.Sprintf("%#x", st.EphemeralOwner), st.Czxid
					row.Holder = owners[st.EphemeralOwner]
				}
			}
		}
		info.Items = append(info.Items, row)
	}
	v.Partition = info
	return nil
}
