// Package retry holds Apache Curator's retry policies as Go values and says
// which ZooKeeper errors are worth retrying.
//
// Every policy is a backoff.BackOff of github.com/cenkalti/backoff/v4, which
// does the timing and the looping; this package only decides how long to
// sleep before each retry and when to give up:
//
//	ExponentialBackoff(base, maxRetries, maxSleep)  Curator's ExponentialBackoffRetry, with its jitter
//	BoundedExponentialBackoff(base, maxRetries, maxSleep)  the same, maxSleep required
//	NTimes(n, sleep)                                RetryNTimes
//	OneTime(sleep)                                  RetryOneTime
//	UntilElapsed(max, sleep)                        RetryUntilElapsed
//	Forever(interval)                               RetryForever
//
// Do runs an operation under a policy and a context, retrying only the
// errors Retryable accepts: a lost connection, an operation timeout, a
// moved session. Session expiry is not retryable: a new session means every
// ephemeral node and watch of the old one is gone, and a lock that depended
// on it must hear so rather than carry on.
//
// Do itself knows nothing of sessions. The connection package binds each
// retried write to the session of its first attempt (the same go-zookeeper
// handle, which never opens a second session), and ends it with
// connection.ErrSessionLost once that session is gone; only operations that
// are safe in any session mark a failure with Again to be retried in the
// next one.
package retry
