package zkserver

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// A replaced database: the ensemble's servers stopped, their databases
// replaced — by an operator's backup, older than what clients have seen,
// or by nothing — and started again at the same addresses. Clients then
// meet zxids that go back (or, when the restored servers elect a leader in
// a later epoch, data that does), and servers that refuse a session that
// has seen a newer zxid than theirs.

// DatabaseBackend is a Backend whose servers' databases can be copied and
// replaced. A backend that does not implement it makes Backup and the
// replacements fail with ErrNoFaults.
type DatabaseBackend interface {
	// Backup copies the database of server i (its snapshots, transaction
	// logs and epochs) into the empty directory dir, while it serves.
	Backup(i int, dir string) error
	// ReplaceDatabase stops every server, gives each the database copied
	// in dir (an empty one if dir is ""), and starts them all again on the
	// same ports, returning once they serve.
	ReplaceDatabase(dir string) error
}

// Backup is a copy of an ensemble's database, as an operator keeps one:
// what one server had written when the copy was taken.
type Backup struct {
	dir string
}

// backups are removed when the ensemble is closed.
type backups struct {
	mu   sync.Mutex
	dirs []string
}

func (b *backups) add(dir string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.dirs = append(b.dirs, dir)
}

func (b *backups) remove() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, d := range b.dirs {
		os.RemoveAll(d)
	}
	b.dirs = nil
}

// Backup copies the database of the ensemble's leader (of its only server)
// while the ensemble serves.
func (e *Ensemble) Backup() (*Backup, error) {
	db, ok := e.b.(DatabaseBackend)
	if !ok {
		return nil, fmt.Errorf("zktest: backup: %w", ErrNoFaults)
	}
	i, err := e.Leader()
	if err != nil {
		return nil, fmt.Errorf("zktest: backup: %w", err)
	}
	dir, err := os.MkdirTemp("", "zktest-backup-")
	if err != nil {
		return nil, err
	}
	if err := db.Backup(i, dir); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("zktest: backup of server %d: %w", i, err)
	}
	e.backups.add(dir)
	e.logf("zktest: backup of server %d (%s)", i, e.b.Addrs()[i])
	return &Backup{dir: dir}, nil
}

// RestoreBackup stops every server, replaces its database with b, and
// starts them again at the same addresses: an ensemble restored from a
// backup. It returns once they serve.
func (e *Ensemble) RestoreBackup(b *Backup) error {
	if b == nil || b.dir == "" {
		return fmt.Errorf("zktest: restore: no backup")
	}
	return e.replaceDatabase("restore a backup", b.dir)
}

// WipeDatabase stops every server, removes its database, and starts them
// again at the same addresses: an ensemble replaced by an empty one. It
// returns once they serve.
func (e *Ensemble) WipeDatabase() error { return e.replaceDatabase("wipe the database", "") }

func (e *Ensemble) replaceDatabase(what, dir string) error {
	db, ok := e.b.(DatabaseBackend)
	if !ok {
		return fmt.Errorf("zktest: %s: %w", what, ErrNoFaults)
	}
	e.logf("zktest: %s of every server", what)
	if err := db.ReplaceDatabase(dir); err != nil {
		return fmt.Errorf("zktest: %s: %w", what, err)
	}
	return nil
}

// pausedCopyAfter is how many torn copies Backup makes before it pauses
// the server for the next.
const pausedCopyAfter = 5

// version2 is where a server keeps its database, under its dataDir.
const version2 = "version-2"

func (s *localServer) dataDir() string { return filepath.Join(s.dir, "data") }

// Backup copies server i's database while it runs. A file written to
// during the copy is torn, so the copy is taken again until no file
// changed while it was made. Under writes that never pause, after
// pausedCopyAfter torn copies the server is stopped (SIGSTOP) for the
// length of one copy, which it cannot then change: a pause of one
// server, as Pause makes, for the time a copy of its files takes.
func (b *localBackend) Backup(i int, dir string) error {
	src := filepath.Join(b.servers[i].dataDir(), version2)
	for try := range 50 {
		before, err := listFiles(src)
		if err != nil {
			return err
		}
		paused := try >= pausedCopyAfter && b.Pause(i) == nil
		var after []fileState
		err = copyDir(dir, src, before)
		if err == nil {
			after, err = listFiles(src)
		}
		if paused {
			if rerr := b.Resume(i); err == nil {
				err = rerr
			}
		}
		if err != nil {
			return err
		}
		if sameFiles(before, after) {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return errors.New("the database kept changing while it was copied")
}

// ReplaceDatabase stops every server (SIGKILL: their data is replaced),
// replaces each database with the copy in dir or nothing, and starts them.
func (b *localBackend) ReplaceDatabase(dir string) error {
	for _, s := range b.servers {
		if proc, _ := s.running(); proc != nil {
			if err := s.halt(syscall.SIGKILL, 10*time.Second); err != nil {
				return err
			}
		}
	}
	var files []fileState
	if dir != "" {
		var err error
		if files, err = listFiles(dir); err != nil {
			return err
		}
	}
	for _, s := range b.servers {
		dst := filepath.Join(s.dataDir(), version2)
		if err := os.RemoveAll(dst); err != nil {
			return err
		}
		if dir == "" {
			continue
		}
		if err := os.MkdirAll(dst, 0o755); err != nil {
			return err
		}
		if err := copyDir(dst, dir, files); err != nil {
			return err
		}
	}
	for _, s := range b.servers {
		if err := s.launch(b.install, b.cfg.serverFlags()); err != nil {
			return err
		}
	}
	deadline := time.Now().Add(b.cfg.startTimeout)
	for _, s := range b.servers {
		if err := s.waitReady(deadline); err != nil {
			return err
		}
	}
	return nil
}

// fileState is what tells whether a file changed: its size and mtime.
type fileState struct {
	name  string
	size  int64
	mtime time.Time
}

func listFiles(dir string) ([]fileState, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []fileState
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			return nil, err
		}
		out = append(out, fileState{e.Name(), fi.Size(), fi.ModTime()})
	}
	return out, nil
}

func sameFiles(a, b []fileState) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].name != b[i].name || a[i].size != b[i].size || !a[i].mtime.Equal(b[i].mtime) {
			return false
		}
	}
	return true
}

// copyDir copies files from src into dst, replacing what dst holds of
// them.
func copyDir(dst, src string, files []fileState) error {
	for _, f := range files {
		if err := copySparse(filepath.Join(dst, f.name), filepath.Join(src, f.name)); err != nil {
			return err
		}
	}
	return nil
}

// copySparse copies a file, leaving holes where it holds zeros: a
// transaction log is preallocated (64 MiB of zeros, sparse), and a copy
// of each would fill the disk.
func copySparse(dst, src string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	buf := make([]byte, 64<<10)
	zero := make([]byte, len(buf))
	var off int64
	for {
		n, err := in.Read(buf)
		if n > 0 && !bytes.Equal(buf[:n], zero[:n]) {
			if _, werr := out.WriteAt(buf[:n], off); werr != nil {
				out.Close()
				return werr
			}
		}
		off += int64(n)
		if err == io.EOF {
			break
		}
		if err != nil {
			out.Close()
			return err
		}
	}
	if err := out.Truncate(off); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
