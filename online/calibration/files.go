package calibration

import (
	"encoding/gob"
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// FileStore keeps the calibrations as files in Dir, one per replica, this
// replica's at Path(Dir, replica) (intervals-<replica>.gob, gob-encoded
// Snapshots, replaced atomically), for replicas that share a disk.
type FileStore struct{ dir, own string }

// NewFileStore returns the store of the files in dir, writing replica's.
func NewFileStore(dir, replica string) FileStore {
	return FileStore{dir: dir, own: Path(dir, replica)}
}

// Own is this replica's file.
func (fs FileStore) Own() string { return fs.own }

// String is the directory.
func (fs FileStore) String() string { return fs.dir }

// Save writes sc to this replica's file, atomically (a temporary file
// renamed over it).
func (fs FileStore) Save(sc *Snapshot) error {
	path := fs.own
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("online: writing the interval calibration: %w", err)
	}
	removeLeftovers(filepath.Dir(path))
	tmp, err := os.CreateTemp(filepath.Dir(path), ".intervals-*")
	if err != nil {
		return fmt.Errorf("online: writing the interval calibration: %w", err)
	}
	if err := tmp.Chmod(0o644); err != nil { // readable by replicas running as other users
		tmp.Close()
		return fmt.Errorf("online: writing the interval calibration: %w", err)
	}
	defer os.Remove(tmp.Name()) // after a successful rename, there is none
	if err := gob.NewEncoder(tmp).Encode(sc); err != nil {
		tmp.Close()
		return fmt.Errorf("online: writing the interval calibration to %s: %w", tmp.Name(), err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("online: writing the interval calibration to %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("online: writing the interval calibration to %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("online: writing the interval calibration: %w", err)
	}
	return nil
}

// removeLeftovers removes the temporary files of writes cut short (a
// kill -9 between creating and renaming one) that nobody has touched for an
// hour: no write takes that long.
func removeLeftovers(dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), ".intervals-") {
			continue
		}
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > time.Hour {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// Read decodes the calibration files in the directory (but this
// replica's with others), in the order of their names.
func (fs FileStore) Read(sh Shape, others bool, skipped func(path string, err error)) ([]Kept, error) {
	ents, err := os.ReadDir(fs.dir)
	if errors.Is(err, iofs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var kept []Kept
	for _, e := range ents {
		if e.IsDir() || !strings.HasPrefix(e.Name(), filePrefix) || !strings.HasSuffix(e.Name(), fileSuffix) {
			continue
		}
		path := filepath.Join(fs.dir, e.Name())
		if others && path == fs.own {
			continue
		}
		k := Kept{Where: path}
		if info, err := e.Info(); err == nil {
			k.Modified = info.ModTime()
		}
		r, err := os.Open(path)
		if err != nil {
			skipped(path, err)
			continue
		}
		err = gob.NewDecoder(r).Decode(&k.Snapshot)
		r.Close()
		if err == nil {
			err = sh.Check(&k.Snapshot)
		}
		if err != nil {
			skipped(path, err)
			continue
		}
		kept = append(kept, k)
	}
	return kept, nil
}

// Drop removes the file of k unless it was written since it was read (or
// is gone already).
func (fs FileStore) Drop(k Kept) error {
	info, err := os.Stat(k.Where)
	if err == nil && !info.ModTime().Equal(k.Modified) {
		return nil // written since: its replica is back
	}
	if err == nil {
		err = os.Remove(k.Where)
	}
	if err != nil && !errors.Is(err, iofs.ErrNotExist) {
		return fmt.Errorf("removing the calibration of a gone replica: %w", err)
	}
	return nil
}
