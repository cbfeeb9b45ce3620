package zktest

import "github.com/zkrecipes/zkrecipes/internal/zkserver"

// Backup is a copy of an ensemble's database, as an operator keeps one:
// the snapshots, transaction logs and epochs one server had written when
// Ensemble.Backup took it.
type Backup = zkserver.Backup

// Backup copies the database of the ensemble's leader (of its only server)
// while the ensemble serves; RestoreBackup puts it back. A copy that a
// write tore is taken again; under writes that never pause, the server is
// paused (as Pause does) for the length of one copy. A backend that
// cannot (external, docker) gives an error matching ErrNoFaults.
func (e *Ensemble) Backup() (*Backup, error) { return e.e.Backup() }

// RestoreBackup stops every server, replaces its database with b, and
// starts them again at the same addresses, returning once they serve: an
// ensemble restored from a backup older than what its clients have seen.
// Their sessions meet zxids that go back (a standalone server, or servers
// that elect a leader in an epoch the clients saw) or data that does
// (a leader in a later epoch), and servers that refuse to resume a
// session that has seen a newer zxid than theirs.
//
// A plain go-zookeeper Conn opened before (Conn, Connect) never gets its
// session back, nor a new one: open another. The ensemble's own session
// (Root) is opened again.
func (e *Ensemble) RestoreBackup(b *Backup) error {
	e.admin.close()
	return e.e.RestoreBackup(b)
}

// WipeDatabase stops every server, removes its database, and starts them
// again at the same addresses, returning once they serve: an ensemble
// replaced by an empty one (a lost volume). What RestoreBackup says of
// clients holds here too; test roots made before are gone.
func (e *Ensemble) WipeDatabase() error {
	e.admin.close()
	return e.e.WipeDatabase()
}
