package calibration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestFileStoreDropsOnlyWhatItRead: of two replicas' files, Read with
// others skips this replica's own; Drop removes a file unchanged since it
// was read, keeps one rewritten since (its replica is back), takes a file
// gone already as dropped, and says so when the file cannot be reached.
func TestFileStoreDropsOnlyWhatItRead(t *testing.T) {
	sh, snapshot := smallShape, smallSnapshot(time.Time{})
	dir := t.TempDir()
	live, back, gone := NewFileStore(dir, "live"), NewFileStore(dir, "back"), NewFileStore(dir, "gone")
	for _, fs := range []FileStore{live, back, gone} {
		if err := fs.Save(snapshot); err != nil {
			t.Fatal(err)
		}
	}
	kept, err := live.Read(sh, true, func(path string, err error) { t.Errorf("skipped %s: %v", path, err) })
	if err != nil {
		t.Fatal(err)
	}
	if len(kept) != 2 || kept[0].Where != back.Own() || kept[1].Where != gone.Own() {
		t.Fatalf("others' files = %v, want %s and %s", wheres(kept), back.Own(), gone.Own())
	}

	// back writes again after the read: a later modification time.
	later := kept[0].Modified.Add(time.Second)
	if err := back.Save(snapshot); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(back.Own(), later, later); err != nil {
		t.Fatal(err)
	}
	for _, k := range kept {
		if err := live.Drop(k); err != nil {
			t.Errorf("Drop(%s) = %v", k.Where, err)
		}
	}
	if _, err := os.Stat(back.Own()); err != nil {
		t.Errorf("Drop removed the file of a replica that wrote since it was read: %v", err)
	}
	if _, err := os.Stat(gone.Own()); !os.IsNotExist(err) {
		t.Errorf("the gone replica's file is still there (%v)", err)
	}
	if _, err := os.Stat(live.Own()); err != nil {
		t.Errorf("dropping the others removed this replica's own file: %v", err)
	}
	if err := live.Drop(kept[1]); err != nil {
		t.Errorf("dropping a file gone already = %v, want nil", err)
	}

	// A path under a regular file cannot be reached (ENOTDIR, not "does not exist").
	blocked := Kept{Where: filepath.Join(live.Own(), "intervals-x.gob")}
	err = live.Drop(blocked)
	if err == nil || !strings.Contains(err.Error(), "removing the calibration of a gone replica") {
		t.Errorf("Drop of an unreachable file = %v, want an error that says what failed", err)
	}
}
