// Package zkprom records what a zkrecipes client and its recipes do as
// Prometheus metrics: it is an adapter on connection.Observer, a module
// of its own so that only a service that imports it depends on
// github.com/prometheus/client_golang.
//
//	obs, err := zkprom.NewObserver(prometheus.DefaultRegisterer)
//	if err != nil { ... }
//	c, err := connection.Open(ctx, servers, connection.WithObserver(obs))
//
// The series, in the units the Prometheus naming conventions ask for
// (seconds, and _total for counters):
//
//   - zkrecipes_request_duration_seconds{op,result} (histogram): every
//     request sent to ZooKeeper, from its hand-over to the connection to
//     its answer or to why none came. op is ZooKeeper's name of the
//     operation (create, getData, multi...); result is "ok", a short name
//     of the error (no_node, node_exists, bad_version, connection_closed,
//     session_expired, canceled, deadline_exceeded...) or "other". The
//     path is not a label: its values are unbounded.
//   - zkrecipes_requests_in_flight (gauge): requests sent and not answered.
//   - zkrecipes_notifications_total{type} (counter): watch notifications,
//     type node_created, node_deleted, node_data_changed or
//     node_children_changed.
//   - zkrecipes_notification_watch_age_seconds{type} (histogram): the
//     time from setting a watch to the notification that fired it
//     (connection.Notification.SinceWatch), for the notifications where
//     the client knows it.
//   - zkrecipes_session_state{state} (gauge): one series per state
//     (CONNECTED, SUSPENDED, RECONNECTED, LOST, READ_ONLY), 1 for the
//     current one, 0 for the others; all 0 before the first session and
//     once the client is closed.
//   - zkrecipes_session_changes_total{state} (counter): state changes, by
//     the state entered.
//   - zkrecipes_hold_wait_seconds{recipe,result} (histogram): the waits of
//     lock recipes' contenders for their turn (mutex, rwlock, election; a
//     semaphore's through its mutex); result "ok" when the turn came, else
//     canceled, deadline_exceeded, suspended, session_lost, node_deleted
//     or other.
//   - zkrecipes_holds{recipe} (gauge): holds held now: locks, leases,
//     leaders' terms, queue items taken.
//   - zkrecipes_holds_lost_total{recipe,cause} (counter): holds that ended
//     otherwise than by their release; cause session_lost, suspended,
//     node_deleted (errors.Is on connection.ErrSessionLost, ErrSuspended,
//     ErrNodeDeleted, in that order) or other (a revocation).
//   - zkrecipes_hold_duration_seconds{recipe} (histogram): how long holds
//     lasted, released or lost.
//   - zkrecipes_views_trusted{recipe} (gauge): caches (and the views built
//     on one) trusted now.
//   - zkrecipes_counter_outcomes_total{outcome} (counter): shared
//     counters' writes whose answer was lost, by what the counter learnt:
//     applied or not_applied (its marker's read settled it), or unknown
//     (the operation failed with connection.ErrOutcomeUnknown).
//
// recipe is the observer's recipe name: mutex, naive, rwlock, semaphore,
// election, queue, cache. WithConstLabels adds fixed labels to every
// series, such as a client's name: two observers on one Registerer need
// different ones. RegisterObserver also returns the function that
// unregisters the collector, for a service that opens and closes clients
// on one Registerer.
//
// The observer's functions update in-memory series only: they take no
// lock but the series' own and never block, as connection.Observer's
// contract requires.
package zkprom
