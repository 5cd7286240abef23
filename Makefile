# Developer conveniences; CI runs .ci/run, not make.

SCRATCH ?= scratch

.PHONY: figures
figures: docs/report-spectrum.png

# docs/model.md's picture of the report's spectrum figure: the default ETTh1
# model (about 2 minutes of training on 2 cores) and its report, whose
# spectrum.png is copied here. Training and drawing are deterministic, so
# the file changes only when the model or the figure does.
docs/report-spectrum.png:
	mkdir -p $(SCRATCH)
	go run ./cmd/freqlens train --data testdata/ETTh1.csv --horizon 96 --out $(SCRATCH)/etth1.safetensors
	go run ./cmd/freqlens report --model $(SCRATCH)/etth1.safetensors --data testdata/ETTh1.csv --out $(SCRATCH)/etth1-report
	cp $(SCRATCH)/etth1-report/spectrum.png $@
