package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/zkrecipes/zkrecipes/recipes/discovery"
)

const discoverAbout = `Lists the instances of SERVICE registered under --base in
curator-x-discovery's layout (by Java services using Curator's
ServiceDiscovery, by zkrecipes register, by a zkrecipes Discovery), one a
line, sorted by id; without SERVICE, the services and how many instances
each has. Disabled instances (Curator's enabled=false) are listed, marked
so. A node that holds no instance is left out (zkrecipes inspect shows
it).

--json prints the instances as one JSON array, each as Curator writes it
(name, id, address, port, sslPort, payload, registrationTimeUTC,
serviceType, uriSpec, enabled); without SERVICE, [{"name", "instances",
"enabled"}].

--watch follows SERVICE (a cache of its instances) and prints every change,
a line each, until interrupted (each line starts with the time it was
printed):
  RESYNC N instances       the view, then one "  INSTANCE" line each: first,
                           and after an OVERFLOW
  ADDED INSTANCE           an instance registered
  UPDATED INSTANCE         its fields changed
  REMOVED ID               it went (unregistered, its session ended)
  INVALID NODE ERROR       a node that holds no instance
  INITIALIZED              the first load is in
  UNTRUSTED REASON         cut off or session lost: changes may be missed
                           until TRUSTED; the instances printed so far stay
  TRUSTED                  following the server
  OVERFLOW missed N events the output fell behind; a RESYNC follows
INSTANCE is "ID ADDRESS:PORT [ssl:N] TYPE [disabled] [uri=URI] [payload=JSON]".
With --json, one object a line: time, type, node, instance (and old for
UPDATED), error, missed, instances and trusted (RESYNC: the view's trust
then).`

func runDiscover(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := newFlags("discover", "[SERVICE]", out, discoverAbout)
	cf := commonFlagsFor(ctx, fs, connFlags)
	base := fs.String("base", defaultBase, "the base path of the services (Curator's basePath)")
	asJSON := fs.Bool("json", false, "print JSON (see above)")
	watch := fs.Bool("watch", false, "follow SERVICE: print every change of its instances until interrupted")
	if err := parse(fs, args); err != nil {
		return err
	}
	var service string
	switch fs.NArg() {
	case 0:
		if *watch {
			return usagef(fs, "--watch needs a SERVICE")
		}
	case 1:
		service = fs.Arg(0)
	default:
		return usagef(fs, "want at most one SERVICE")
	}
	if service != "" {
		if err := (&discovery.Instance{Name: service, ID: "x"}).Validate(); err != nil {
			return usagef(fs, "SERVICE %q is not a node name", service)
		}
	}
	client, err := cf.openFor(ctx, fs, *base, nil)
	if err != nil {
		return err
	}
	defer client.Close()
	d, err := discovery.New(client, *base)
	if err != nil {
		return err
	}
	switch {
	case *watch:
		return watchService(ctx, d, service, *asJSON, out)
	case service == "":
		return listServices(ctx, d, *asJSON, out)
	}
	is, err := d.Instances(ctx, service)
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(out).Encode(is)
	}
	return writeInstances(out, is)
}

// listServices prints the services under the base path and their
// instances' counts.
func listServices(ctx context.Context, d *discovery.Discovery, asJSON bool, out io.Writer) error {
	names, err := d.Names(ctx)
	if err != nil {
		return err
	}
	type row struct {
		Name      string `json:"name"`
		Instances int    `json:"instances"`
		Enabled   int    `json:"enabled"`
	}
	rows := []row{}
	for _, n := range names {
		is, err := d.Instances(ctx, n)
		if err != nil {
			return err
		}
		r := row{Name: n, Instances: len(is)}
		for _, i := range is {
			if !i.Disabled {
				r.Enabled++
			}
		}
		rows = append(rows, r)
	}
	if asJSON {
		return json.NewEncoder(out).Encode(rows)
	}
	if len(rows) == 0 {
		_, err := fmt.Fprintf(out, "%s: no services\n", d.Base())
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVICE\tINSTANCES\tENABLED")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%d\t%d\n", r.Name, r.Instances, r.Enabled)
	}
	return tw.Flush()
}

// writeInstances prints instances as a table.
func writeInstances(out io.Writer, is []discovery.Instance) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tADDRESS\tPORT\tSSL\tTYPE\tENABLED\tREGISTERED\tURI\tPAYLOAD")
	for _, i := range is {
		enabled := "yes"
		if i.Disabled {
			enabled = "no"
		}
		reg := "-"
		if !i.Registration.IsZero() {
			reg = i.Registration.UTC().Format("2006-01-02T15:04:05.000Z")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", i.ID, orDash(i.Address), portText(i.Port), portText(i.SSLPort),
			i.ServiceType, enabled, reg, orDash(i.URI(nil)), orDash(payloadText(i.Payload)))
	}
	return tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func portText(p int) string {
	if p == 0 {
		return "-"
	}
	return strconv.Itoa(p)
}

// payloadText is a payload on one line, compacted and cut if long.
func payloadText(p json.RawMessage) string {
	if len(p) == 0 {
		return ""
	}
	var b bytes.Buffer
	if json.Compact(&b, p) != nil {
		return dataText(string(p))
	}
	return dataText(b.String())
}

// instanceLine is an instance on one line: "ID ADDRESS:PORT [ssl:N] TYPE
// [disabled] [uri=URI] [payload=JSON]".
func instanceLine(i discovery.Instance) string {
	parts := []string{i.ID, fmt.Sprintf("%s:%s", orDash(i.Address), portText(i.Port))}
	if i.SSLPort != 0 {
		parts = append(parts, "ssl:"+strconv.Itoa(i.SSLPort))
	}
	parts = append(parts, string(i.ServiceType))
	if i.Disabled {
		parts = append(parts, "disabled")
	}
	if u := i.URI(nil); u != "" {
		parts = append(parts, "uri="+u)
	}
	if p := payloadText(i.Payload); p != "" {
		parts = append(parts, "payload="+p)
	}
	return strings.Join(parts, " ")
}

// watchService prints the changes of a service's instances until ctx
// ends.
func watchService(ctx context.Context, d *discovery.Discovery, service string, asJSON bool, out io.Writer) error {
	c, err := d.Cache(service)
	if err != nil {
		return err
	}
	defer c.Close()
	events, err := c.Listen(ctx)
	if err != nil {
		return err
	}
	write := writeDiscoveryLine
	if asJSON {
		write = writeDiscoveryJSON
	}
	for ev := range events {
		if err := write(out, time.Now(), ev); err != nil {
			return err // stdout closed
		}
	}
	return nil // interrupted
}

func writeDiscoveryLine(out io.Writer, at time.Time, ev discovery.Event) error {
	var b strings.Builder
	b.WriteString(at.Format("15:04:05.000") + " " + ev.Type.String())
	switch ev.Type {
	case discovery.Added, discovery.Updated:
		b.WriteString(" " + instanceLine(ev.Instance))
	case discovery.Removed:
		b.WriteString(" " + ev.Instance.ID)
	case discovery.Invalid:
		fmt.Fprintf(&b, " %s %s", ev.Node, strconv.Quote(strings.TrimPrefix(ev.Err.Error(), "discovery: ")))
	case discovery.Untrusted:
		if ev.Err != nil {
			b.WriteString(" " + ev.Err.Error())
		}
	case discovery.Overflow:
		fmt.Fprintf(&b, " missed %d events", ev.Missed)
	case discovery.Resync:
		fmt.Fprintf(&b, " %d instances", len(ev.Instances))
		for _, i := range ev.Instances {
			b.WriteString("\n  " + instanceLine(i))
		}
	}
	b.WriteString("\n")
	_, err := io.WriteString(out, b.String())
	return err
}

func writeDiscoveryJSON(out io.Writer, at time.Time, ev discovery.Event) error {
	line := struct {
		Time      time.Time            `json:"time"`
		Type      string               `json:"type"`
		Node      string               `json:"node,omitempty"`
		Instance  *discovery.Instance  `json:"instance,omitempty"`
		Old       *discovery.Instance  `json:"old,omitempty"`
		Error     string               `json:"error,omitempty"`
		Missed    int                  `json:"missed,omitempty"`
		Instances []discovery.Instance `json:"instances,omitempty"`
		Trusted   *bool                `json:"trusted,omitempty"` // RESYNC: the view's trust then
	}{Time: at, Type: ev.Type.String(), Node: ev.Node, Missed: ev.Missed, Instances: ev.Instances}
	switch ev.Type {
	case discovery.Added, discovery.Updated, discovery.Removed:
		line.Instance = &ev.Instance
	}
	if ev.Type == discovery.Updated {
		line.Old = &ev.Old
	}
	if ev.Err != nil {
		line.Error = ev.Err.Error()
	}
	if ev.Type == discovery.Resync {
		if line.Instances == nil {
			line.Instances = []discovery.Instance{}
		}
		line.Trusted = &ev.Trusted
	}
	return json.NewEncoder(out).Encode(line)
}
