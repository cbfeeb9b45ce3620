package wire

import (
	"encoding/binary"
	"errors"
	"slices"
	"testing"

	"github.com/go-zookeeper/zk"
)

// stat68 is a Stat as ZooKeeper encodes it, with czxid, ephemeralOwner
// and pzxid set.
func stat68(czxid, owner, pzxid int64) []byte {
	st := make([]byte, 68)
	binary.BigEndian.PutUint64(st[0:8], uint64(czxid))
	binary.BigEndian.PutUint64(st[44:52], uint64(owner))
	binary.BigEndian.PutUint64(st[60:68], uint64(pzxid))
	return st
}

// TestCreate2Coding: a create2 request as ZooKeeper reads it
// (CreateRequest: path, data, ACL vector, flags, under opcode 15), and its
// reply's path and Stat decoded; a reply cut short is refused.
func TestCreate2Coding(t *testing.T) {
	acl := []zk.ACL{{Perms: zk.PermAll, Scheme: "world", ID: "anyone"}, {Perms: zk.PermRead, Scheme: "digest", ID: "u:x"}}
	b := EncodeCreate2("/l/_c_x-lock-", []byte("data"), acl, 3)
	if int(binary.BigEndian.Uint32(b)) != len(b)-4 || binary.BigEndian.Uint32(b[8:12]) != opCreate2 {
		t.Fatal("header")
	}
	d := &dec{b: b[12:]}
	if string(d.bytes()) != "/l/_c_x-lock-" || string(d.bytes()) != "data" {
		t.Fatal("path, data")
	}
	if n := d.i32(); n != 2 {
		t.Fatalf("%d ACL entries", n)
	}
	for _, a := range acl {
		if d.i32() != a.Perms || string(d.bytes()) != a.Scheme || string(d.bytes()) != a.ID {
			t.Fatalf("ACL entry %v", a)
		}
	}
	if d.i32() != 3 || len(d.b) != 0 || d.bad {
		t.Fatal("flags, end")
	}
	// The tracker reads the request as a create of a protected name.
	if p := requestPath(b); p != "/l/_c_x-lock-" || !protectedPath([]byte(p)) {
		t.Fatalf("requestPath %q", p)
	}

	reply := appendString(nil, "/l/_c_x-lock-0000000007")
	reply = append(reply, stat68(0x1234, 0x99, 0x1234)...)
	p, st, err := DecodeCreate2(reply)
	if err != nil || p != "/l/_c_x-lock-0000000007" || st.Czxid != 0x1234 || st.EphemeralOwner != 0x99 || st.Pzxid != 0x1234 {
		t.Fatalf("DecodeCreate2: %q %+v %v", p, st, err)
	}
	for n := range len(reply) {
		if _, _, err := DecodeCreate2(reply[:n]); err == nil {
			t.Fatalf("a reply cut at %d of %d decoded", n, len(reply))
		}
	}
}

// TestGetChildren2Coding: a getChildren2 request without a watch, and its
// reply's names and Stat decoded; a reply cut short, or naming more
// children than it could hold, is refused.
func TestGetChildren2Coding(t *testing.T) {
	b := EncodeGetChildren2("/l")
	if int(binary.BigEndian.Uint32(b)) != len(b)-4 || binary.BigEndian.Uint32(b[8:12]) != opGetChildren2 {
		t.Fatal("header")
	}
	d := &dec{b: b[12:]}
	if string(d.bytes()) != "/l" || d.take(1)[0] != 0 || len(d.b) != 0 || d.bad {
		t.Fatal("body")
	}
	if requestKey(b) != TooLargeKey("children", "/l") {
		t.Fatalf("requestKey %q", requestKey(b))
	}

	reply := binary.BigEndian.AppendUint32(nil, 2)
	reply = appendString(reply, "a")
	reply = appendString(reply, "b")
	reply = append(reply, stat68(1, 0, 0x77)...)
	names, st, err := DecodeGetChildren2(reply)
	if err != nil || !slices.Equal(names, []string{"a", "b"}) || st.Pzxid != 0x77 {
		t.Fatalf("DecodeGetChildren2: %v %+v %v", names, st, err)
	}
	for n := range len(reply) {
		if _, _, err := DecodeGetChildren2(reply[:n]); err == nil {
			t.Fatalf("a reply cut at %d of %d decoded", n, len(reply))
		}
	}
	huge := binary.BigEndian.AppendUint32(nil, 1<<30)
	if _, _, err := DecodeGetChildren2(append(huge, reply[4:]...)); err == nil {
		t.Fatal("a count of 2^30 names decoded")
	}
}

// TestGetDataAndDeleteCoding: a getData request without a watch and its
// reply's data and Stat decoded (a reply cut short is refused); an exists
// request without a watch and its reply's Stat; a delete request of a
// path at a version, -1 included.
func TestGetDataAndDeleteCoding(t *testing.T) {
	b := EncodeGetData("/n")
	if int(binary.BigEndian.Uint32(b)) != len(b)-4 || binary.BigEndian.Uint32(b[8:12]) != opGetData {
		t.Fatal("getData header")
	}
	d := &dec{b: b[12:]}
	if string(d.bytes()) != "/n" || d.take(1)[0] != 0 || len(d.b) != 0 || d.bad {
		t.Fatal("getData body")
	}
	reply := binary.BigEndian.AppendUint32(nil, 4)
	reply = append(reply, "mine"...)
	reply = append(reply, stat68(0x42, 0x99, 0)...)
	data, st, err := DecodeGetData(reply)
	if err != nil || string(data) != "mine" || st.Czxid != 0x42 || st.EphemeralOwner != 0x99 {
		t.Fatalf("DecodeGetData: %q %+v %v", data, st, err)
	}
	reply[4] = 'X'
	if string(data) != "mine" {
		t.Fatal("DecodeGetData's data shares the reply's bytes")
	}
	for n := range len(reply) {
		if _, _, err := DecodeGetData(reply[:n]); err == nil {
			t.Fatalf("a reply cut at %d of %d decoded", n, len(reply))
		}
	}
	b = EncodeExists("/n")
	if int(binary.BigEndian.Uint32(b)) != len(b)-4 || binary.BigEndian.Uint32(b[8:12]) != opExists {
		t.Fatal("exists header")
	}
	d = &dec{b: b[12:]}
	if string(d.bytes()) != "/n" || d.take(1)[0] != 0 || len(d.b) != 0 || d.bad {
		t.Fatal("exists body")
	}
	if st, err := DecodeExists(stat68(0x42, 0x99, 0)); err != nil || st.Czxid != 0x42 || st.EphemeralOwner != 0x99 {
		t.Fatalf("DecodeExists: %+v %v", st, err)
	}
	if _, err := DecodeExists(stat68(0x42, 0x99, 0)[:67]); err == nil {
		t.Fatal("a Stat cut short decoded")
	}
	for _, v := range []int32{-1, 0, 7} {
		b := EncodeDelete("/n", v)
		if int(binary.BigEndian.Uint32(b)) != len(b)-4 || binary.BigEndian.Uint32(b[8:12]) != opDelete {
			t.Fatal("delete header")
		}
		d := &dec{b: b[12:]}
		if string(d.bytes()) != "/n" || d.i32() != v || len(d.b) != 0 || d.bad {
			t.Fatalf("delete body at version %d", v)
		}
	}
}

// TestReplyErrAsGoZookeeper: a reply's error code is go-zookeeper's error
// for it: its sentinel for the codes it knows, its text for the others.
func TestReplyErrAsGoZookeeper(t *testing.T) {
	for code, want := range map[int32]error{
		0: nil, -101: zk.ErrNoNode, -110: zk.ErrNodeExists, -103: zk.ErrBadVersion,
		-108: zk.ErrNoChildrenForEphemerals, -112: zk.ErrSessionExpired, -114: zk.ErrInvalidACL,
		-118: zk.ErrSessionMoved, -102: zk.ErrNoAuth, -8: zk.ErrBadArguments,
	} {
		if got := ReplyErr(code); !errors.Is(got, want) || (want == nil) != (got == nil) {
			t.Errorf("ReplyErr(%d) = %v, want %v", code, got, want)
		}
	}
	if got := ReplyErr(-6); got == nil || got.Error() != "unknown error: -6" {
		t.Errorf("ReplyErr(-6) = %v, want go-zookeeper's \"unknown error: -6\"", got)
	}
}
