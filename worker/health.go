package main

import "sync/atomic"

// healthState is what /healthz reports.
type healthState struct{ up atomic.Bool }

func (h *healthState) setRunning(v bool) { h.up.Store(v) }
func (h *healthState) running() bool     { return h.up.Load() }
