package retry_test

import (
	"context"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/retry"
)

// Retry an operation after lost connections, with Curator's
// exponential backoff and jitter; stop at once on any other error.
func ExampleDo() {
	policy := retry.ExponentialBackoff(100*time.Millisecond, 5, 2*time.Second)
	attempts := 0
	err := retry.Do(context.Background(), policy, func(ctx context.Context) error {
		attempts++
		if attempts < 3 {
			return zk.ErrConnectionClosed // retryable
		}
		return nil
	})
	fmt.Println(attempts, err)
	// Output: 3 <nil>
}

// Session expiry is never retried: what depended on the session is gone.
func ExampleRetryable() {
	fmt.Println(retry.Retryable(zk.ErrConnectionClosed), retry.Retryable(zk.ErrSessionExpired))
	// Output: true false
}
