package online

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/freqlens/freqlens/model"
	"github.com/freqlens/freqlens/modelfile"
)

const checkpointPrefix, checkpointSuffix = "freqlens-v", ".safetensors"

// checkpointName is the file of a version; the zero padding keeps the
// names in version order.
func checkpointName(version int64) string {
	return fmt.Sprintf("%s%09d%s", checkpointPrefix, version, checkpointSuffix)
}

// SaveCheckpoint writes m as version into dir (created if needed) through a
// temporary file and a rename, so a reader never sees half a model, and
// removes all but the newest keep checkpoints.
func SaveCheckpoint(dir string, m *model.Model, version int64, keep int) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	m.Meta.Version = version
	path := filepath.Join(dir, checkpointName(version))
	tmp, err := os.CreateTemp(dir, ".tmp-"+checkpointPrefix+"*")
	if err != nil {
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	_, werr := modelfile.Write(tmp, m)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("checkpoint %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	names, err := checkpoints(dir)
	if err != nil {
		return path, err
	}
	for _, old := range names[:max(0, len(names)-keep)] {
		if err := os.Remove(filepath.Join(dir, old)); err != nil {
			return path, fmt.Errorf("checkpoint: removing an old version: %w", err)
		}
	}
	return path, nil
}

// checkpoints lists dir's checkpoint files, oldest first.
func checkpoints(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	var names []string
	for _, e := range ents {
		if n := e.Name(); !e.IsDir() && strings.HasPrefix(n, checkpointPrefix) && strings.HasSuffix(n, checkpointSuffix) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names, nil
}

// LatestCheckpoint loads the newest checkpoint in dir that loads cleanly,
// skipping (and reporting through skipped) any that do not. It returns
// nil and no error when dir holds none or does not exist.
func LatestCheckpoint(dir string, skipped func(path string, err error)) (*model.Model, error) {
	names, err := checkpoints(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	for i := len(names) - 1; i >= 0; i-- {
		path := filepath.Join(dir, names[i])
		m, err := modelfile.Load(path)
		if err == nil {
			return m, nil
		}
		if skipped != nil {
			skipped(path, err)
		}
	}
	return nil, nil
}
