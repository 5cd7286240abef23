package service

import (
	"github.com/freqlens/freqlens/dataset"
	"github.com/freqlens/freqlens/readings"
	"github.com/freqlens/freqlens/window"
)

// HistoryPanel returns how the history of the readings this configuration
// serves is put on steps to train on (see dataset.PanelConfig): its value
// fields, input.cadence (0 infers it from the data), and window.max_gap and
// window.fill, so that a model trains on the steps it will serve. name
// names the source in errors.
func (c Config) HistoryPanel(name string) dataset.PanelConfig {
	fields := c.Readings.ValueFields
	if len(fields) == 0 {
		fields = readings.DefaultConfig().ValueFields
	}
	maxGap := c.Window.MaxGap
	switch {
	case maxGap < 0: // window.max_gap: 0, restart on any missing step
		maxGap = 0
	case maxGap == 0:
		maxGap = window.DefaultConfig().MaxGap
	}
	return dataset.PanelConfig{
		Name: name, Fields: fields, Cadence: c.Pipeline.Cadence,
		MaxGap: maxGap, Hold: c.Window.Fill == window.FillHold,
	}
}
