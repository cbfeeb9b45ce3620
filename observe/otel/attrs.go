package otelzk

import (
	"context"
	"errors"

	"github.com/go-zookeeper/zk"
	"go.opentelemetry.io/otel/attribute"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
	"github.com/zkrecipes/zkrecipes/recipes/node"
)

// The attributes. Those OpenTelemetry's semantic conventions define (the
// database client's) are used as they define them; ZooKeeper's own facts
// are under zookeeper., the recipes' under zkrecipes.
const (
	attrSystem        = attribute.Key("db.system.name")
	attrOperation     = attribute.Key("db.operation.name")
	attrErrorType     = attribute.Key("error.type")
	attrPath          = attribute.Key("zookeeper.path")
	attrSession       = attribute.Key("zookeeper.session.id")
	attrWatch         = attribute.Key("zookeeper.watch")
	attrAttempt       = attribute.Key("zookeeper.attempt")
	attrRequestBytes  = attribute.Key("zookeeper.request.size")
	attrResponseBytes = attribute.Key("zookeeper.response.size")
	attrRecipe        = attribute.Key("zkrecipes.recipe")
	attrRecipePath    = attribute.Key("zkrecipes.path")
	attrParticipant   = attribute.Key("zkrecipes.participant")
	attrAhead         = attribute.Key("zkrecipes.ahead")
	attrToken         = attribute.Key("zkrecipes.token")
	attrCause         = attribute.Key("zkrecipes.cause")
	attrConsumed      = attribute.Key("zkrecipes.consumed")
	attrState         = attribute.Key("zkrecipes.state")
	attrEventType     = attribute.Key("zookeeper.event.type")
	attrOutcome       = attribute.Key("zkrecipes.outcome")
)

// systemZooKeeper is db.system.name for ZooKeeper, which the conventions'
// list of database systems does not name: they ask for the name the
// instrumentation knows then.
var systemZooKeeper = attrSystem.String("zookeeper")

// otherType is error.type for an error the conventions' list does not
// name.
const otherType = "_OTHER"

// zkCodes are the names ZooKeeper gives its error codes (KeeperException's
// Code), for the errors go-zookeeper returns for them.
var zkCodes = []struct {
	err  error
	name string
}{
	{zk.ErrNoNode, "NONODE"},
	{zk.ErrNodeExists, "NODEEXISTS"},
	{zk.ErrBadVersion, "BADVERSION"},
	{zk.ErrNotEmpty, "NOTEMPTY"},
	{zk.ErrNoChildrenForEphemerals, "NOCHILDRENFOREPHEMERALS"},
	{zk.ErrNoAuth, "NOAUTH"},
	{zk.ErrAuthFailed, "AUTHFAILED"},
	{zk.ErrInvalidACL, "INVALIDACL"},
	{zk.ErrSessionExpired, "SESSIONEXPIRED"},
	{zk.ErrSessionMoved, "SESSIONMOVED"},
	{zk.ErrConnectionClosed, "CONNECTIONLOSS"},
	{zk.ErrClosing, "CLOSING"},
	{zk.ErrAPIError, "APIERROR"},
	{zk.ErrUnknown, "SYSTEMERROR"},
}

// requestErrorType is error.type of a request that failed: ZooKeeper's
// name of its code (a lost answer is CONNECTIONLOSS), CLOSING for a
// request its handle's end cut short, response_too_large for an answer
// longer than the client's buffer, canceled or deadline_exceeded for a
// context's error.
func requestErrorType(err error) string {
	for _, c := range zkCodes {
		if errors.Is(err, c.err) {
			return c.name
		}
	}
	switch {
	case errors.Is(err, connection.ErrResponseTooLarge):
		return "response_too_large"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline_exceeded"
	}
	return otherType
}

// waitErrorType is error.type of a wait that ended without its turn.
func waitErrorType(err error) string {
	switch {
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline_exceeded"
	}
	if cause, ok := lossCause(err); ok {
		return cause
	}
	return otherType
}

// holdCause is zkrecipes.cause of a hold's end.
func holdCause(err error) string {
	if err == nil {
		return "released"
	}
	if cause, ok := lossCause(err); ok {
		return cause
	}
	return "other"
}

// lossCause names the loss err wraps, if it wraps one: session_lost,
// suspended or node_deleted. A cause that wraps both ErrSessionLost and
// ErrSuspended is the session's loss, the later fact.
func lossCause(err error) (string, bool) {
	switch {
	case errors.Is(err, connection.ErrSessionLost):
		return "session_lost", true
	case errors.Is(err, connection.ErrSuspended):
		return "suspended", true
	case errors.Is(err, connection.ErrNodeDeleted):
		return "node_deleted", true
	}
	return "", false
}

// viewCause is zkrecipes.cause of the end of a view's trust.
func viewCause(err error) string {
	switch {
	case errors.Is(err, connection.ErrSessionLost):
		return "session_lost"
	case errors.Is(err, cache.ErrSuspended), errors.Is(err, connection.ErrSuspended):
		return "suspended"
	case errors.Is(err, cache.ErrClosed), errors.Is(err, node.ErrClosed):
		return "closed"
	case errors.Is(err, connection.ErrNodeDeleted):
		return "node_deleted" // a kept node's (recipes/node), by someone else
	}
	return "other"
}

// stateName is zkrecipes.state of a client in state s: the state's name
// in lower case, as OpenTelemetry writes attribute values.
func stateName(s connection.State) string {
	switch s {
	case connection.Connected:
		return "connected"
	case connection.Suspended:
		return "suspended"
	case connection.Reconnected:
		return "reconnected"
	case connection.Lost:
		return "lost"
	case connection.ReadOnly:
		return "read_only"
	}
	return "unknown"
}

// eventType is zookeeper.event.type of a watch notification.
func eventType(t zk.EventType) string {
	switch t {
	case zk.EventNodeCreated:
		return "node_created"
	case zk.EventNodeDeleted:
		return "node_deleted"
	case zk.EventNodeDataChanged:
		return "node_data_changed"
	case zk.EventNodeChildrenChanged:
		return "node_children_changed"
	}
	return "other"
}

// counterOutcome is the zkrecipes.outcome of a counter's lost answer:
// "applied", "not_applied" or "unknown".
func counterOutcome(o connection.CounterOutcome) string {
	switch {
	case !o.Settled:
		return "unknown"
	case o.Applied:
		return "applied"
	}
	return "not_applied"
}
