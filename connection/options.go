package connection

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/errtext"
	"github.com/zkrecipes/zkrecipes/retry"
)

// Defaults used when no option says otherwise.
const (
	// DefaultSessionTimeout is the session timeout asked of the server
	// unless WithSessionTimeout sets it; the server clamps it to its own
	// minimum and maximum (2 and 20 ticks by default: 4 s and 40 s with
	// ZooKeeper's default tickTime of 2 s).
	DefaultSessionTimeout = 15 * time.Second
	// DefaultDialTimeout bounds each TCP connect.
	DefaultDialTimeout = time.Second
)

// DefaultRetryPolicy is used for operations when no policy is given:
// Curator's recommended ExponentialBackoff(1s base in Curator; 100ms here
// to suit locks), 10 retries, at most 5 s between them.
func DefaultRetryPolicy() retry.Policy {
	return retry.BoundedExponentialBackoff(100*time.Millisecond, 10, 5*time.Second)
}

// Option configures a Client.
type Option func(*options) error

type options struct {
	sessionTimeout time.Duration
	dialTimeout    time.Duration
	policy         retry.Policy
	namespace      string
	acl            ACLProvider
	auth           []authInfo
	logger         *slog.Logger
	dial           func(network, addr string, timeout time.Duration) (net.Conn, error)
	errorPolicy    ErrorPolicy
	maxBufferSize  int
	maxRequestSize int
	defaultData    []byte
	serverLag      time.Duration
	observer       *Observer
	noLocalExpiry  bool // tests only: rely on the server's word alone
	trackEnsemble  bool // WithEnsembleTracker
}

type authInfo struct {
	scheme string
	auth   []byte
}

func newOptions(opts []Option) (*options, error) {
	o := &options{
		sessionTimeout: DefaultSessionTimeout,
		dialTimeout:    DefaultDialTimeout,
		policy:         DefaultRetryPolicy(),
		acl:            OpenACL(),
		logger:         slog.New(discard{}),
		dial:           net.DialTimeout,
		maxRequestSize: DefaultMaxRequestSize,
	}
	for _, opt := range opts {
		if opt == nil {
			return nil, errtext.Errorf("%w: nil option", ErrInvalidOption)
		}
		if err := opt(o); err != nil {
			return nil, err
		}
	}
	if o.serverLag >= o.sessionTimeout {
		return nil, invalid("server lag %v must be below the session timeout %v", o.serverLag, o.sessionTimeout)
	}
	return o, nil
}

func invalid(format string, args ...any) error {
	return errtext.Errorf("%w: "+format, append([]any{ErrInvalidOption}, args...)...)
}

// WithSessionTimeout sets the session timeout asked of the server,
// DefaultSessionTimeout unless set. The server may clamp it;
// Session().Timeout() reports what it granted.
func WithSessionTimeout(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return invalid("session timeout %v must be positive", d)
		}
		o.sessionTimeout = d
		return nil
	}
}

// WithDialTimeout bounds each TCP connect to a server.
func WithDialTimeout(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return invalid("dial timeout %v must be positive", d)
		}
		o.dialTimeout = d
		return nil
	}
}

// WithRetryPolicy sets the policy that retries operations after a lost
// connection (never after a lost session).
func WithRetryPolicy(p retry.Policy) Option {
	return func(o *options) error {
		if p == nil {
			return invalid("nil retry policy")
		}
		o.policy = p
		return nil
	}
}

// WithNamespace roots every path of the client under ns, like a chroot:
// with namespace "/app", "/locks/a" is "/app/locks/a" on the server. The
// namespace node is created, as a container, on first use.
func WithNamespace(ns string) Option {
	return func(o *options) error {
		if err := ValidatePath(ns); err != nil {
			return invalid("namespace: %v", err)
		}
		if ns == "/" {
			ns = ""
		}
		o.namespace = ns
		return nil
	}
}

// WithACLProvider sets the ACLs of the nodes the client creates.
func WithACLProvider(p ACLProvider) Option {
	return func(o *options) error {
		if p == nil {
			return invalid("nil ACL provider")
		}
		o.acl = p
		return nil
	}
}

// WithACL gives every node the client creates the same ACL.
func WithACL(acl []zk.ACL) Option {
	return func(o *options) error {
		if len(acl) == 0 {
			return invalid("empty ACL")
		}
		return WithACLProvider(FixedACL(acl))(o)
	}
}

// WithDigestAuth authenticates every session with the digest scheme, as
// user:password. Nodes created with zk.DigestACL for the same user are
// readable by this client only.
func WithDigestAuth(user, password string) Option {
	return WithAuth("digest", []byte(user+":"+password))
}

// WithAuth authenticates every session with scheme and auth, as
// ZooKeeper's addAuthInfo. Credentials the server refuses fail Open with
// ErrAuthFailed; refused for a later session, they leave the client
// without a session while it tries again (ErrAuthFailed).
func WithAuth(scheme string, auth []byte) Option {
	return func(o *options) error {
		if scheme == "" {
			return invalid("empty auth scheme")
		}
		o.auth = append(o.auth, authInfo{scheme: scheme, auth: append([]byte(nil), auth...)})
		return nil
	}
}

// WithLogger sets the logger for state changes, retries and go-zookeeper's
// own messages (at debug level). By default nothing is logged.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) error {
		if l == nil {
			return invalid("nil logger")
		}
		o.logger = l
		return nil
	}
}

// WithDialer sets how TCP connections are made, for TLS or a proxy. It
// has net.DialTimeout's shape.
func WithDialer(dial func(network, addr string, timeout time.Duration) (net.Conn, error)) Option {
	return func(o *options) error {
		if dial == nil {
			return invalid("nil dialer")
		}
		o.dial = dial
		return nil
	}
}

// WithTLS connects to the servers' TLS client port (ZooKeeper's
// secureClientPort) with cfg: the servers' addresses must be those ports.
// When cfg has no ServerName, the host of each address is checked against
// the certificate. For servers that require a client certificate
// (ssl.clientAuth=need), put it in cfg.Certificates. A server certificate
// cfg does not trust, or a server that refuses the client's certificate
// (or its absence), makes Open fail at once with an error matching
// ErrTLS. SASL is not supported (go-zookeeper has no SASL); digest
// authentication (WithDigestAuth) works over TLS.
func WithTLS(cfg *tls.Config) Option {
	return func(o *options) error {
		if cfg == nil {
			return invalid("nil TLS config")
		}
		cfg := cfg.Clone()
		o.dial = func(network, addr string, timeout time.Duration) (net.Conn, error) {
			return tls.DialWithDialer(&net.Dialer{Timeout: timeout}, network, addr, cfg)
		}
		return nil
	}
}

// untrusted reports whether a dial failed on the server's certificate:
// no retry helps.
func untrusted(err error) bool {
	var (
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
		verify   *tls.CertificateVerificationError
	)
	return errors.As(err, &unknown) || errors.As(err, &hostname) || errors.As(err, &invalid) || errors.As(err, &verify) ||
		refusedByServer(err)
}

// refusedByServer reports whether the server ended the TLS handshake with
// an alert about our certificate: none given where one is required, or
// one it does not trust.
func refusedByServer(err error) bool {
	var op *net.OpError
	if !errors.As(err, &op) || op.Op != "remote error" || op.Err == nil {
		return false
	}
	msg := op.Err.Error()
	return strings.Contains(msg, "certificate") || strings.Contains(msg, "access denied")
}

// tlsConn reports a certificate alert the server sends after the
// handshake.
type tlsConn struct {
	*tls.Conn
	refused func(error)
	once    sync.Once
}

func (c *tlsConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if err != nil && refusedByServer(err) {
		c.once.Do(func() { c.refused(err) })
	}
	return n, err
}

// WithErrorPolicy decides whether Suspended already ends the trust in a
// hold (StandardPolicy, the default) or only Lost does (SessionPolicy).
func WithErrorPolicy(p ErrorPolicy) Option {
	return func(o *options) error {
		if p != StandardPolicy && p != SessionPolicy {
			return invalid("unknown error policy %d", int(p))
		}
		o.errorPolicy = p
		return nil
	}
}

// WithServerLag tells the client how long a server of the ensemble may go
// on answering it after the leader last heard of its session: for a
// follower cut off from the leader (or a paused leader), the ensemble's
// syncLimit × tickTime, plus a tick. The client then declares its session
// Lost that much earlier than the session timeout after the server last
// heard from it, so that a hold is ended before the leader can expire the
// session even while a follower keeps answering.
//
// The default, 0, trusts every answer. With it, a session timeout at or
// below syncLimit × tickTime (10 s with ZooKeeper's sample settings) can
// expire on the leader while the client still hears answers; under
// StandardPolicy a session timeout above syncLimit × tickTime is enough,
// under SessionPolicy this option is needed too (docs/safety.md). The lag
// must be below the session timeout.
func WithServerLag(d time.Duration) Option {
	return func(o *options) error {
		if d < 0 {
			return invalid("server lag %v must not be negative", d)
		}
		o.serverLag = d
		return nil
	}
}

// WithMaxBufferSize bounds the size of a response the client accepts (the
// server's jute.maxbuffer counterpart); 0, the default, accepts any size
// (go-zookeeper's default). A longer answer — listing a directory with too
// many children, say — fails its request with ErrResponseTooLarge, and the
// connection drops once and reconnects within the session (go-zookeeper
// reads no further): with StandardPolicy the client's holds are suspended
// and so lost. Leave it unset unless memory must be bounded.
func WithMaxBufferSize(n int) Option {
	return func(o *options) error {
		if n < 0 {
			return invalid("negative buffer size %d", n)
		}
		o.maxBufferSize = n
		return nil
	}
}

// WithMaxRequestSize tells the client the longest request the servers
// read: their jute.maxbuffer, DefaultMaxRequestSize unless they were
// started with another. A write longer than that (a node's data, an
// item, a transaction) fails at once with ErrDataTooLarge and is never
// sent: a server that receives one closes the connection, which suspends
// every hold of the client.
func WithMaxRequestSize(n int) Option {
	return func(o *options) error {
		if n < 1 {
			return invalid("request size %d must be positive", n)
		}
		o.maxRequestSize = n
		return nil
	}
}

// WithDefaultData sets the data of nodes that recipes create when the
// caller gives none. Curator's default is the host's IP address; so is
// this client's when the option is absent. Client.DefaultData returns it.
func WithDefaultData(data []byte) Option {
	return func(o *options) error {
		o.defaultData = append([]byte{}, data...)
		return nil
	}
}

// discard is a slog.Handler that drops everything: the default logger
// (slog.DiscardHandler, from Go 1.24, would raise the Go version the
// module needs).
type discard struct{}

func (discard) Enabled(context.Context, slog.Level) bool  { return false }
func (discard) Handle(context.Context, slog.Record) error { return nil }
func (d discard) WithAttrs([]slog.Attr) slog.Handler      { return d }
func (d discard) WithGroup(string) slog.Handler           { return d }
