package bench

// The trees the cache scenarios read, made and removed with go-zookeeper.

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/go-zookeeper/zk"
)

// cacheTreeShape is how a tree of about size nodes is made: the root,
// dirs directories under it, leaves leaves under each.
func cacheTreeShape(size int) (dirs, leaves int) {
	dirs = max(1, min(100, int(math.Sqrt(float64(size)))))
	leaves = max(0, (size-2)/dirs) // (size-1-dirs)/dirs rounded up: 10,000 gives 100 × 99, 10,001 nodes
	return dirs, leaves
}

// nodeData is every node's data: 20 bytes.
var nodeData = []byte("0123456789abcdefghij")

// buildCacheTrees creates a tree per size under root, by multis of up to
// 1,000 creates, several in flight.
func buildCacheTrees(conn *zk.Conn, root string, sizes []int) (paths []string, nodes []int, err error) {
	if err := createParents(conn, root); err != nil {
		return nil, nil, err
	}
	var leaves []string
	for i, size := range sizes {
		t := fmt.Sprintf("%s/t%d", root, i)
		d, l := cacheTreeShape(size)
		top := []string{t}
		for j := range d {
			dir := fmt.Sprintf("%s/d%03d", t, j)
			top = append(top, dir)
			for k := range l {
				leaves = append(leaves, fmt.Sprintf("%s/n%04d", dir, k))
			}
		}
		if err := createAll(conn, top); err != nil {
			return nil, nil, err
		}
		paths, nodes = append(paths, t), append(nodes, 1+d+d*l)
	}
	return paths, nodes, createAll(conn, leaves)
}

// buildLive creates the tree of the lag and full-speed scenarios: a node
// to set one write at a time, and n nodes to set at full speed.
func buildLive(conn *zk.Conn, root string, n int) (live, lagNode string, ev []string, err error) {
	live = root + "/live"
	lagNode, dir := live+"/lag", live+"/ev"
	if err := createAll(conn, []string{live, lagNode, dir}); err != nil {
		return "", "", nil, err
	}
	for i := range n {
		ev = append(ev, fmt.Sprintf("%s/n%04d", dir, i))
	}
	return live, lagNode, ev, createAll(conn, ev)
}

// createParents creates p and its parents where missing.
func createParents(conn *zk.Conn, p string) error {
	for i := 1; i <= len(p); i++ {
		if i == len(p) || p[i] == '/' {
			if _, err := conn.Create(p[:i], nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
				return err
			}
		}
	}
	return nil
}

// createAll creates paths (parents before children, in order for each
// batch) by multis of 1,000, four in flight.
func createAll(conn *zk.Conn, paths []string) error {
	const batch = 1000
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
		slots    = make(chan struct{}, 4)
	)
	if len(paths) <= batch {
		return multiCreate(conn, paths)
	}
	// A first batch holding parents of later ones runs alone.
	if err := multiCreate(conn, paths[:batch]); err != nil {
		return err
	}
	for i := batch; i < len(paths); i += batch {
		part := paths[i:min(len(paths), i+batch)]
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			if err := multiCreate(conn, part); err != nil {
				mu.Lock()
				firstErr = cmpErr(firstErr, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return firstErr
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

func multiCreate(conn *zk.Conn, paths []string) error {
	ops := make([]any, len(paths))
	for i, p := range paths {
		ops[i] = &zk.CreateRequest{Path: p, Data: nodeData, Acl: zk.WorldACL(zk.PermAll)}
	}
	_, err := conn.Multi(ops...)
	return err
}

// deleteTree deletes p and everything under it, leaves first, by multis.
func deleteTree(conn *zk.Conn, p string) error {
	var order []string
	var walk func(string) error
	walk = func(p string) error {
		kids, _, err := conn.Children(p)
		if err != nil {
			return err
		}
		for _, k := range kids {
			if err := walk(p + "/" + k); err != nil {
				return err
			}
		}
		order = append(order, p)
		return nil
	}
	if err := walk(p); err != nil {
		return err
	}
	for i := 0; i < len(order); i += 1000 {
		var ops []any
		for _, q := range order[i:min(len(order), i+1000)] {
			ops = append(ops, &zk.DeleteRequest{Path: q, Version: -1})
		}
		if _, err := conn.Multi(ops...); err != nil {
			return err
		}
	}
	return nil
}

// spreadLeaves returns n leaves of tree, from different directories where
// there are enough.
func spreadLeaves(conn *zk.Conn, tree string, n int) ([]string, error) {
	dirs, _, err := conn.Children(tree)
	if err != nil {
		return nil, err
	}
	slices.Sort(dirs)
	var out []string
	for round := 0; len(out) < n; round++ {
		added := false
		for _, d := range dirs {
			leaves, _, err := conn.Children(tree + "/" + d)
			if err != nil {
				return nil, err
			}
			slices.Sort(leaves)
			if round < len(leaves) && len(out) < n {
				out, added = append(out, tree+"/"+d+"/"+leaves[round]), true
			}
		}
		if !added {
			return nil, fmt.Errorf("bench: fewer than %d leaves under %s", n, tree)
		}
	}
	return out, nil
}
