package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/zkrecipes/zkrecipes/recipes/cache"
)

const watchAbout = `Follows PATH and the nodes under it (down to --depth levels) and prints
every change, a line each, until interrupted: zkCli's "-w" that does not
stop after one event. PATH need not exist. It is a cache of the subtree
(recipes/cache): one data and one child watch per node, a reconnect reads
only what changed, a session lost and found again prints the difference.

Lines (each starts with the time it was printed):
  RESYNC N nodes            the view, then one "  PATH vVERSION DATA" line a node:
                            first, and after an OVERFLOW
  CREATED PATH vVERSION DATA
  CHANGED PATH vVERSION DATA
  DELETED PATH
  INITIALIZED               the first full load is in
  UNTRUSTED REASON          cut off or session lost: changes may be missed
                            until TRUSTED; the nodes printed so far stay
  TRUSTED                   following the server
  OVERFLOW missed N events  the output fell behind; a RESYNC follows
DATA is quoted as Go quotes strings; a node that cannot be read ends with
error="...". Events of one path come in its version order.

JSON (--json), one object a line: time, type, and for nodes path and node
{path, version, czxid, mzxid, cversion, num_children, ephemeral_owner,
data (UTF-8 text) or data_base64, error}; error (UNTRUSTED), missed
(OVERFLOW), nodes and trusted (RESYNC: the view, absent when empty, and
whether it was trusted then).`

func runWatch(ctx context.Context, args []string, out, _ io.Writer) error {
	fs := newFlags("watch", "PATH", out, watchAbout)
	cf := commonFlagsFor(ctx, fs, connFlags)
	asJSON := fs.Bool("json", false, "print one JSON object a line (see above)")
	depth := fs.Int("depth", -1, "how many levels below PATH to follow: 0 PATH alone, 1 its children; -1 all")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef(fs, "want one PATH")
	}
	if *depth < -1 {
		return usagef(fs, "--depth %d: give -1 (all), 0 or more levels", *depth)
	}
	path := fs.Arg(0)
	client, err := cf.openFor(ctx, fs, path, nil)
	if err != nil {
		return err
	}
	defer client.Close()
	var opts []cache.Option
	if *depth >= 0 {
		opts = append(opts, cache.WithMaxDepth(*depth))
	}
	c, err := cache.New(client, path, opts...)
	if err != nil {
		return err
	}
	defer c.Close()
	events, err := c.Listen(ctx)
	if err != nil {
		return err
	}
	write := writeEventLine
	if *asJSON {
		write = writeEventJSON
	}
	for ev := range events {
		if err := write(out, time.Now(), ev); err != nil {
			return err // stdout closed
		}
	}
	return nil // interrupted
}

// writeEventLine prints ev as watch's lines.
func writeEventLine(out io.Writer, at time.Time, ev cache.Event) error {
	var b strings.Builder
	b.WriteString(at.Format("15:04:05.000"))
	b.WriteString(" ")
	b.WriteString(ev.Type.String())
	switch ev.Type {
	case cache.Created, cache.Changed:
		b.WriteString(" " + nodeLine(ev.Node))
	case cache.Deleted:
		b.WriteString(" " + ev.Path)
	case cache.Untrusted:
		if ev.Err != nil {
			b.WriteString(" " + ev.Err.Error())
		}
	case cache.Overflow:
		fmt.Fprintf(&b, " missed %d events", ev.Missed)
	case cache.Resync:
		fmt.Fprintf(&b, " %d nodes", ev.Snapshot.Len())
		for _, p := range ev.Snapshot.Paths() {
			n, _ := ev.Snapshot.Get(p)
			b.WriteString("\n  " + nodeLine(n))
		}
	}
	b.WriteString("\n")
	_, err := io.WriteString(out, b.String())
	return err
}

func nodeLine(n cache.Node) string {
	s := fmt.Sprintf("%s v%d %s", n.Path, n.Stat.Version, strconv.Quote(string(n.Data)))
	if n.Err != nil {
		s += " error=" + strconv.Quote(n.Err.Error())
	}
	return s
}

// jsonNode is a node in watch's JSON.
type jsonNode struct {
	Path           string `json:"path"`
	Version        int32  `json:"version"`
	Czxid          int64  `json:"czxid"`
	Mzxid          int64  `json:"mzxid"`
	Cversion       int32  `json:"cversion"`
	NumChildren    int32  `json:"num_children"`
	EphemeralOwner int64  `json:"ephemeral_owner,omitempty"`
	Data           string `json:"data,omitempty"`
	DataBase64     string `json:"data_base64,omitempty"`
	Error          string `json:"error,omitempty"`
}

func jsonNodeOf(n cache.Node) jsonNode {
	j := jsonNode{Path: n.Path, Version: n.Stat.Version, Czxid: n.Stat.Czxid, Mzxid: n.Stat.Mzxid,
		Cversion: n.Stat.Cversion, NumChildren: n.Stat.NumChildren, EphemeralOwner: n.Stat.EphemeralOwner}
	if utf8.Valid(n.Data) {
		j.Data = string(n.Data)
	} else {
		j.DataBase64 = base64.StdEncoding.EncodeToString(n.Data)
	}
	if n.Err != nil {
		j.Error = n.Err.Error()
	}
	return j
}

// writeEventJSON prints ev as one JSON object.
func writeEventJSON(out io.Writer, at time.Time, ev cache.Event) error {
	line := struct {
		Time    time.Time  `json:"time"`
		Type    string     `json:"type"`
		Path    string     `json:"path,omitempty"`
		Node    *jsonNode  `json:"node,omitempty"`
		Error   string     `json:"error,omitempty"`
		Missed  int        `json:"missed,omitempty"`
		Nodes   []jsonNode `json:"nodes,omitempty"`
		Trusted *bool      `json:"trusted,omitempty"` // RESYNC: the view's trust then
	}{Time: at, Type: ev.Type.String(), Path: ev.Path, Missed: ev.Missed}
	switch ev.Type {
	case cache.Created, cache.Changed, cache.Deleted:
		n := jsonNodeOf(ev.Node)
		line.Node = &n
	case cache.Untrusted:
		if ev.Err != nil {
			line.Error = ev.Err.Error()
		}
	case cache.Resync:
		trusted := ev.Snapshot.Trusted()
		line.Trusted = &trusted
		for _, p := range ev.Snapshot.Paths() {
			n, _ := ev.Snapshot.Get(p)
			line.Nodes = append(line.Nodes, jsonNodeOf(n))
		}
	}
	return json.NewEncoder(out).Encode(line)
}
