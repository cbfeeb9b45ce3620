package compress

import (
	"context"
	"errors"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/errtext"
)

// ErrCorrupt means data could not be decompressed: it is not what the
// Provider writes (not gzip, another method, cut short, a checksum or a
// length that does not match, bytes after the end). The data may not be
// compressed at all: Curator stores no mark of compression in a node.
var ErrCorrupt = errors.New("compress: corrupt data")

// Provider compresses and decompresses node data, as Curator's
// CompressionProvider does. Path is the node's path as the client names
// it, for a provider that treats paths differently; Gzip ignores it.
// Implementations must be safe for concurrent use, must not change or
// keep data, and must return an error wrapping ErrCorrupt for data they
// cannot decompress.
type Provider interface {
	Compress(path string, data []byte) ([]byte, error)
	Decompress(path string, data []byte) ([]byte, error)
}

// Get reads the node at path and returns its data decompressed by p, as
// Curator's getData().decompressed() does. Data p cannot decompress is an
// error wrapping ErrCorrupt, returned with the node's Stat.
func Get(ctx context.Context, c *connection.Client, path string, p Provider) ([]byte, *zk.Stat, error) {
	if p == nil {
		return nil, nil, errtext.Errorf("compress: get %s: %w: nil provider", path, connection.ErrInvalidOption)
	}
	raw, stat, err := c.Get(ctx, path)
	if err != nil {
		return nil, nil, errtext.Errorf("compress: get %s: %w", path, err)
	}
	data, err := p.Decompress(path, raw)
	if err != nil {
		return nil, stat, errtext.Errorf("compress: get %s: %w", path, err)
	}
	return data, stat, nil
}

// Set writes data compressed by p to the node at path if its version
// matches (-1 for any), as Curator's setData().compressed() does; see
// connection.Client.Set.
func Set(ctx context.Context, c *connection.Client, path string, data []byte, version int32, p Provider) (*zk.Stat, error) {
	if p == nil {
		return nil, errtext.Errorf("compress: set %s: %w: nil provider", path, connection.ErrInvalidOption)
	}
	z, err := p.Compress(path, data)
	if err != nil {
		return nil, errtext.Errorf("compress: set %s: %w", path, err)
	}
	stat, err := c.Set(ctx, path, z, version)
	if err != nil {
		return nil, errtext.Errorf("compress: set %s: %w", path, err)
	}
	return stat, nil
}

// Create creates the node at path with data compressed by p, as Curator's
// create().compressed() does, and returns its path; see
// connection.Client.Create for mode and opts.
func Create(ctx context.Context, c *connection.Client, path string, data []byte, mode connection.Mode, p Provider, opts ...connection.CreateOption) (string, error) {
	if p == nil {
		return "", errtext.Errorf("compress: create %s: %w: nil provider", path, connection.ErrInvalidOption)
	}
	z, err := p.Compress(path, data)
	if err != nil {
		return "", errtext.Errorf("compress: create %s: %w", path, err)
	}
	created, err := c.Create(ctx, path, z, mode, opts...)
	if err != nil {
		return "", errtext.Errorf("compress: create %s: %w", path, err)
	}
	return created, nil
}
