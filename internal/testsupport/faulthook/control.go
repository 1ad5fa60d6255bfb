package faulthook

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// TB is the part of testing.TB the test side uses.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	TempDir() string
}

// Hooks is the test's side of one directory of holds.
type Hooks struct {
	t   TB
	dir string
}

// New makes an empty directory of holds for the test.
func New(t TB) *Hooks {
	return &Hooks{t: t, dir: t.TempDir()}
}

// Dir is the directory a worker is given (EnvDir, or Interceptor's).
func (h *Hooks) Dir() string { return h.dir }

// Env is the environment entry that gives a worker process the directory.
func (h *Hooks) Env() string { return EnvDir + "=" + h.dir }

// Arm arms hold: the Hit-th activity to reach its point from now on holds.
// Arming a name again starts its count afresh.
func (h *Hooks) Arm(hold Hold) {
	h.t.Helper()
	if err := hold.validate(); err != nil {
		h.t.Fatalf("%v", err)
	}
	h.clear(hold.Name)
	if err := writeJSON(filepath.Join(h.dir, hold.Name+armSuffix), hold); err != nil {
		h.t.Fatalf("arm fault hook %s: %v", hold.Name, err)
	}
}

// clear removes every file of the hold name.
func (h *Hooks) clear(name string) {
	h.t.Helper()
	entries, err := os.ReadDir(h.dir)
	if err != nil {
		h.t.Fatalf("fault hooks: %v", err)
	}
	for _, e := range entries {
		if n := e.Name(); strings.HasPrefix(n, name+".") {
			if err := os.Remove(filepath.Join(h.dir, n)); err != nil {
				h.t.Fatalf("fault hooks: %v", err)
			}
		}
	}
}

// Disarm takes the hold away: no later activity holds there. One already
// held stays held until released.
func (h *Hooks) Disarm(name string) {
	h.t.Helper()
	if err := os.Remove(filepath.Join(h.dir, name+armSuffix)); err != nil && !os.IsNotExist(err) {
		h.t.Fatalf("disarm fault hook %s: %v", name, err)
	}
}

// WaitHeld waits until an activity holds at the hold name and returns
// where. It fails the test when ctx ends first, or as soon as over, when
// set, returns a reason (the run ended, say): the case was not reached.
func (h *Hooks) WaitHeld(ctx context.Context, name string, over func() string) Held {
	h.t.Helper()
	path := filepath.Join(h.dir, name+heldSuffix)
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		if data, err := os.ReadFile(path); err == nil {
			var held Held
			if err := json.Unmarshal(data, &held); err != nil {
				h.t.Fatalf("fault hook %s: %s: %v", name, path, err)
			}
			return held
		}
		if over != nil {
			if why := over(); why != "" {
				h.t.Fatalf("fault hook %s was never reached: %s", name, why)
			}
		}
		select {
		case <-ctx.Done():
			h.t.Fatalf("fault hook %s was never reached: %v", name, ctx.Err())
		case <-tick.C:
		}
	}
}

// IsHeld reports whether an activity holds at the hold name now or did.
func (h *Hooks) IsHeld(name string) bool {
	_, err := os.Stat(filepath.Join(h.dir, name+heldSuffix))
	return err == nil
}

// Release lets the activity held at name go on, and disarms the hold.
func (h *Hooks) Release(name string) {
	h.t.Helper()
	h.Disarm(name)
	if err := os.WriteFile(filepath.Join(h.dir, name+releaseSuffix), nil, 0o644); err != nil {
		h.t.Fatalf("release fault hook %s: %v", name, err)
	}
}
