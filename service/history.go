package service

import (
	"github.com/freqlens/freqlens/dataset"
	"github.com/freqlens/freqlens/window"
)

// HistoryPanel returns how the history of the readings this configuration
// serves is put on steps to train on (see dataset.PanelConfig): its value
// fields, input.cadence (0 infers it from the data), input.align (empty
// or auto finds it from the data), and window.max_gap and
// window.fill, so that a model trains on the steps it will serve. name
// names the source in errors.
func (c Config) HistoryPanel(name string) dataset.PanelConfig {
	return dataset.PanelConfig{
		Name: name, Fields: c.Readings.ValueFields, Cadence: c.Cadence, Align: string(c.wiringAlign()),
		MaxGap: c.Window.MaxGap, Hold: c.Window.Fill == window.FillHold,
	}
}
