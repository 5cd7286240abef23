package main

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/freqlens/freqlens/model"
	"github.com/freqlens/freqlens/modelfile"
)

// loadModelFile loads a model file, saying how to make one when there is
// none at path.
func loadModelFile(path string) (*model.Model, error) {
	m, err := modelfile.Load(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no model file %s; train one first, e.g. 'freqlens train --data testdata/ETTh1.csv --horizon 96 --out %s' (or --from-topic --config FILE for a topic's history)", path, path)
	}
	return m, err
}
