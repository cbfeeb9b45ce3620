package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/zkrecipes/zkrecipes/recipes/discovery"
)

// defaultBase is the base path of register and discover unless --base
// says otherwise.
const defaultBase = "/services"

const registerAbout = `Registers an instance of SERVICE under --base in curator-x-discovery's
layout and JSON (a node <base>/<SERVICE>/<id> holding a ServiceInstance), as
a Java service using Curator's ServiceDiscovery or a zkrecipes Discovery
registers one, and keeps it registered while CMD runs. CMD gets
ZKRECIPES_SERVICE, ZKRECIPES_INSTANCE_ID and ZKRECIPES_INSTANCE_NODE.
zkrecipes exits with CMD's status, unregistering when CMD ends.

A registration is not a lock: losing it is not fatal. When the session
expires, or someone deletes the node, the instance is registered again as
soon as possible (a dynamic instance in the new session), and CMD runs on;
zkrecipes says so on stderr, once when the instance is no longer
registered and once when it is again. CMD runs in a process group of its
own; signals sent to zkrecipes are passed on to the group, and Ctrl-C on a
terminal reaches CMD once. If zkrecipes is killed, the group is killed at
once. CMD's environment lacks ZK_AUTH and ZK_AUTH_FILE unless --pass-auth.

Without CMD, zkrecipes prints "registered SERVICE/ID at NODE" and keeps the
registration until SIGINT or SIGTERM, then unregisters and exits 0.

A dynamic instance (the default) is an ephemeral node: it goes when
zkrecipes goes. A static or permanent one is a persistent node, deleted
when zkrecipes unregisters and left in place if zkrecipes is killed.
An instance ID that another session still holds (a previous run whose
session has not expired yet) is waited for, up to --timeout; so is a
static or permanent ID whose node is already there (a previous run's,
left when it was killed): zkrecipes never takes over or deletes a node it
did not make, and that one stays until someone deletes it — or until a
run with --adopt takes it over.`

func runRegister(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := newFlags("register", "SERVICE [-- CMD [ARGS...]]", out, registerAbout)
	cf := commonFlagsFor(ctx, fs, connFlags|holdFlags)
	base := fs.String("base", defaultBase, "the base path of the services (Curator's basePath)")
	id := fs.String("id", "", "the instance's id (default: a random UUID, as Curator's builder makes one)")
	address := fs.String("address", "", "the instance's address (default: this host's address, as Curator's builder finds it)")
	port := fs.Int("port", 0, "the instance's port (0: none)")
	sslPort := fs.Int("ssl-port", 0, "the instance's SSL port (0: none)")
	payload := fs.String("payload", "", "the instance's payload, as JSON (an object needs \"@class\" only for Java readers that want a class of their own)")
	uriSpec := fs.String("uri-spec", "", "the instance's URI template, in Curator's syntax: {scheme}://{address}:{port}/path")
	typ := fs.String("type", "dynamic", "the service type: dynamic, dynamic-sequential, static or permanent")
	disabled := fs.Bool("disabled", false, "register the instance disabled (Curator's enabled=false): listed, never offered by providers")
	timeout := fs.Duration("timeout", 0, "give up (exit 124) if the instance is not registered within this time (0: wait as long as it takes)")
	adopt := fs.Bool("adopt", false, "a static or permanent instance: take over the node already at its path (a previous run's, left when it was killed), write this instance into it and delete it on unregister")
	service, cmdArgs, err := parsePath(fs, args)
	if err != nil {
		return err
	}
	inst, err := instanceFromFlags(fs, service, *id, *address, *port, *sslPort, *payload, *uriSpec, *typ, *disabled)
	if err != nil {
		return err
	}
	client, err := cf.openFor(ctx, fs, *base, cmdArgs)
	if err != nil {
		return err
	}
	defer client.Close()
	if inst.Address == "" {
		inst.Address = string(client.DefaultData())
	}
	d, err := discovery.New(client, *base)
	if err != nil {
		return err
	}
	regCtx, cancel := upTo(ctx, *timeout)
	defer cancel()
	var ropts []discovery.RegisterOption
	if *adopt {
		ropts = append(ropts, discovery.WithAdoptExisting())
	}
	reg, err := d.Register(regCtx, inst, ropts...)
	switch {
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		return &exitError{exitTimeout, fmt.Sprintf("%s not registered within %v: %v", inst.Name, *timeout, err)}
	case err != nil:
		return err
	}
	inst = reg.Instance()
	defer func() {
		rctx, cancel := context.WithTimeout(context.Background(), cf.sessionTimeout)
		defer cancel()
		if err := reg.Close(rctx); err != nil {
			fmt.Fprintf(errOut, "zkrecipes register: unregister %s: %v\n", reg.Path(), err)
		}
	}()
	what := inst.Name + "/" + inst.ID
	errOut = &syncWriter{w: errOut} // the reports and CMD's stderr
	stop := reportRegistration(reg, what, errOut)
	defer stop()
	if len(cmdArgs) == 0 {
		fmt.Fprintf(out, "registered %s at %s\n", what, reg.Path())
		<-ctx.Done()
		return nil
	}
	h := newRegistrationHold(reg)
	defer h.end()
	return runUnder(h, underRun{
		name: "register", what: "registration of " + what, cmdArgs: cmdArgs, grace: cf.grace, passAuth: cf.passAuth,
		env: []string{"ZKRECIPES_SERVICE=" + inst.Name, "ZKRECIPES_INSTANCE_ID=" + inst.ID, "ZKRECIPES_INSTANCE_NODE=" + reg.Path()},
	}, out, errOut)
}

// instanceFromFlags is the instance register's flags describe; a bad
// value is a usage error.
func instanceFromFlags(fs *flag.FlagSet, service, id, address string, port, sslPort int, payload, uriSpec, typ string, disabled bool) (discovery.Instance, error) {
	i := discovery.Instance{Name: service, ID: id, Address: address, Port: port, SSLPort: sslPort, Disabled: disabled}
	switch strings.ToLower(strings.ReplaceAll(typ, "_", "-")) {
	case "dynamic":
		i.ServiceType = discovery.Dynamic
	case "dynamic-sequential":
		i.ServiceType = discovery.DynamicSequential
	case "static":
		i.ServiceType = discovery.Static
	case "permanent":
		i.ServiceType = discovery.Permanent
	default:
		return i, usagef(fs, "--type %q: want dynamic, dynamic-sequential, static or permanent", typ)
	}
	if payload != "" {
		if !json.Valid([]byte(payload)) {
			return i, usagef(fs, "--payload is not JSON: %s", payload)
		}
		i.Payload = json.RawMessage(payload)
	}
	if uriSpec != "" {
		u, err := discovery.ParseURISpec(uriSpec)
		if err != nil {
			return i, usagef(fs, "--uri-spec: %s", strings.TrimPrefix(err.Error(), "discovery: "))
		}
		i.URISpec = u
	}
	if i.ID == "" {
		i.ID = "x" // Register makes the UUID; validate the rest now
	}
	if err := i.Validate(); err != nil {
		return i, usagef(fs, "%s", strings.TrimPrefix(err.Error(), "discovery: "))
	}
	i.ID = id
	return i, nil
}

// reportRegistration says on errOut when the instance stops being
// registered, and when it is registered again, until stop is called.
func reportRegistration(reg *discovery.Registration, what string, errOut io.Writer) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		absent := false
		for {
			done, err := reg.Trust(ctx)
			if err != nil {
				return
			}
			if absent {
				fmt.Fprintf(errOut, "zkrecipes register: %s registered again at %s\n", what, reg.Path())
			}
			select {
			case <-done:
			case <-ctx.Done():
				return
			}
			if ctx.Err() != nil {
				return
			}
			absent = true
			fmt.Fprintf(errOut, "zkrecipes register: %s is not registered (%v); registering it again as soon as it can be\n", what, reg.Err())
		}
	}()
	return func() { cancel(); <-ended }
}

// registrationHold is what CMD runs under for register: a hold that lasts
// until register ends it, whatever happens to the registration, which is
// made again by itself. It has no fencing token.
type registrationHold struct {
	reg    *discovery.Registration
	ctx    context.Context
	cancel context.CancelFunc
}

func newRegistrationHold(reg *discovery.Registration) *registrationHold {
	ctx, cancel := context.WithCancel(context.Background())
	return &registrationHold{reg: reg, ctx: ctx, cancel: cancel}
}

func (h *registrationHold) Token() int64             { return 0 }
func (h *registrationHold) Node() string             { return h.reg.Path() }
func (h *registrationHold) Done() <-chan struct{}    { return h.ctx.Done() }
func (h *registrationHold) Context() context.Context { return h.ctx }
func (h *registrationHold) end()                     { h.cancel() }

// sessionTimeout is 0: zkrecipes stopped for long loses nothing CMD must
// not outlive (see runUnder's guardian).
func (h *registrationHold) sessionTimeout() time.Duration { return 0 }
