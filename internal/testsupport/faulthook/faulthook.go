// Package faulthook holds an activity at a named point until a test
// releases it, so that a test kills a worker, fails a peer over or pauses
// something at a moment it has observed rather than one it hopes for.
//
// A hold is armed by the test as a file in a directory the worker watches;
// the worker (a Temporal worker interceptor) stops the matching activity at
// the matching point, says so in another file, and goes on once the test
// writes the release file. Several worker processes may share the
// directory: the hit count lives in it, so exactly one of them holds.
//
// The worker binary has the interceptor only when built with the build tag
// faulthooks (worker/faulthooks.go, which the tests' builds set) and run
// with EnvDir set; production builds carry none of it. Tests that run
// activities in-process add Interceptor to their worker's options.
package faulthook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/interceptor"
)

// EnvDir names the directory of a worker's holds (worker binaries built
// with -tags faulthooks).
const EnvDir = "FLINKMAINT_FAULT_HOOKS_DIR"

// Point is where in an activity a hold stops it.
type Point string

const (
	// Start is before the activity's function runs.
	Start Point = "start"
	// Heartbeat is right after the activity recorded a heartbeat: its
	// progress is known to Temporal, the rest of its work is not done.
	Heartbeat Point = "heartbeat"
	// Done is after the activity's function returned, before its result
	// reaches Temporal: the work is done and nobody knows it.
	Done Point = "done"
)

// Hold is one place where an activity stops until the test releases it.
type Hold struct {
	// Name identifies the hold in the directory (letters, digits, '-').
	Name string `json:"name"`
	// Activity is the activity type.
	Activity string `json:"activity"`
	At       Point  `json:"at"`
	// Workflow, when set, must be part of the activity's workflow ID.
	Workflow string `json:"workflow,omitempty"`
	// Detail, when set, must be part of the heartbeat's details as %v
	// prints them (Heartbeat only).
	Detail string `json:"detail,omitempty"`
	// Input, when set, must be part of the activity's input as %+v
	// prints it (say "DryRun:false").
	Input string `json:"input,omitempty"`
	// Hit is which matching occurrence holds, counted over every worker
	// sharing the directory: 1 is the first.
	Hit int `json:"hit"`
	// PerExecution counts an activity execution once however often it
	// matches (a heartbeat in a polling loop): Hit 2 is then the second
	// execution that reaches the point.
	PerExecution bool `json:"perExecution,omitempty"`
}

// Held is what the worker says once it holds.
type Held struct {
	Hold
	PID        int    `json:"pid"`
	WorkflowID string `json:"workflowId"`
	ActivityID string `json:"activityId"`
	Attempt    int32  `json:"attempt"`
	// Details are the held heartbeat's details as %v prints them.
	Details string `json:"details,omitempty"`
}

const (
	armSuffix     = ".hold.json"
	heldSuffix    = ".held.json"
	releaseSuffix = ".release"
	hitInfix      = ".hit."
	// pollEvery is how often a held activity looks for its release, and
	// how often a test looks for a hold.
	pollEvery = 20 * time.Millisecond
	// beatEvery is how often a held activity that heartbeats records its
	// last heartbeat again, so Temporal does not time it out meanwhile.
	beatEvery = time.Second
)

func (h Hold) validate() error {
	switch {
	case h.Name == "" || strings.ContainsFunc(h.Name, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-')
	}):
		return fmt.Errorf("faulthook: hold name %q: want letters, digits and '-'", h.Name)
	case h.Activity == "":
		return fmt.Errorf("faulthook: hold %s names no activity", h.Name)
	case h.At != Start && h.At != Heartbeat && h.At != Done:
		return fmt.Errorf("faulthook: hold %s: point %q is none of start, heartbeat, done", h.Name, h.At)
	case h.Detail != "" && h.At != Heartbeat:
		return fmt.Errorf("faulthook: hold %s: only a heartbeat has details to match", h.Name)
	case h.Hit < 1:
		return fmt.Errorf("faulthook: hold %s: hit %d, want 1 or more", h.Name, h.Hit)
	}
	return nil
}

// Interceptor returns the worker interceptor that holds activities as the
// files in dir say.
func Interceptor(dir string) interceptor.WorkerInterceptor {
	return &workerInterceptor{dir: dir}
}

type workerInterceptor struct {
	interceptor.WorkerInterceptorBase
	dir string
}

func (w *workerInterceptor) InterceptActivity(_ context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	in := &activityInbound{dir: w.dir}
	in.Next = next
	return in
}

// activityInbound is one activity execution.
type activityInbound struct {
	interceptor.ActivityInboundInterceptorBase
	dir string
	out *activityOutbound
}

func (a *activityInbound) Init(outbound interceptor.ActivityOutboundInterceptor) error {
	a.out = &activityOutbound{dir: a.dir, counted: map[string]bool{}}
	a.out.Next = outbound
	return a.Next.Init(a.out)
}

func (a *activityInbound) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (any, error) {
	a.out.mu.Lock()
	a.out.input = fmt.Sprintf("%+v", in.Args)
	a.out.mu.Unlock()
	reach(ctx, a.dir, Start, nil, a.out.input, nil, nil)
	res, err := a.Next.ExecuteActivity(ctx, in)
	a.out.mu.Lock()
	last := a.out.last
	a.out.mu.Unlock()
	reach(ctx, a.dir, Done, last, a.out.input, a.out.Next, nil)
	return res, err
}

type activityOutbound struct {
	interceptor.ActivityOutboundInterceptorBase
	dir string
	// mu guards last and counted: activities heartbeat from several
	// goroutines.
	mu sync.Mutex
	// input is the execution's input as %+v prints it.
	input string
	// last are the details of the latest heartbeat of this execution.
	last []any
	// counted are the PerExecution holds this execution has counted.
	counted map[string]bool
}

func (a *activityOutbound) RecordHeartbeat(ctx context.Context, details ...any) {
	a.Next.RecordHeartbeat(ctx, details...)
	a.mu.Lock()
	a.last = details
	input := a.input
	a.mu.Unlock()
	reach(ctx, a.dir, Heartbeat, details, input, a.Next, func(name string) bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.counted[name] {
			return false
		}
		a.counted[name] = true
		return true
	})
}

// reach holds the activity of ctx when a hold in dir matches point: it
// counts the hit, and at the hold's hit says so and waits for the release
// (or the activity's end), heartbeating its last details meanwhile. first,
// when set, says whether this execution counts for a PerExecution hold.
func reach(ctx context.Context, dir string, at Point, details []any, input string, beat interceptor.ActivityOutboundInterceptor, first func(name string) bool) {
	holds := armed(dir)
	if len(holds) == 0 {
		return
	}
	info := activity.GetInfo(ctx)
	text := ""
	if at == Heartbeat {
		text = fmt.Sprint(details...)
	}
	for _, h := range holds {
		if h.Activity != info.ActivityType.Name || h.At != at || !strings.Contains(info.WorkflowExecution.ID, h.Workflow) ||
			!strings.Contains(text, h.Detail) || !strings.Contains(input, h.Input) {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, h.Name+hitInfix+strconv.Itoa(h.Hit))); err == nil {
			continue // held already: later hits are not counted
		}
		if h.PerExecution && first != nil && !first(h.Name) {
			continue
		}
		if takeHit(dir, h.Name) != h.Hit {
			continue
		}
		held := Held{Hold: h, PID: os.Getpid(), WorkflowID: info.WorkflowExecution.ID, ActivityID: info.ActivityID, Attempt: info.Attempt, Details: text}
		if err := writeJSON(filepath.Join(dir, h.Name+heldSuffix), held); err != nil {
			activity.GetLogger(ctx).Error("fault hook: cannot say the activity is held", "hold", h.Name, "error", err)
			continue
		}
		activity.GetLogger(ctx).Warn("fault hook: activity held until the test releases it", "hold", h.Name, "point", string(at))
		wait(ctx, filepath.Join(dir, h.Name+releaseSuffix), details, beat)
	}
}

// wait returns once release exists or ctx ends.
func wait(ctx context.Context, release string, details []any, beat interceptor.ActivityOutboundInterceptor) {
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	lastBeat := time.Now()
	for {
		if _, err := os.Stat(release); err == nil {
			return
		}
		if beat != nil && details != nil && time.Since(lastBeat) >= beatEvery {
			beat.RecordHeartbeat(ctx, details...)
			lastBeat = time.Now()
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// armed reads the holds armed in dir; a hold file being written is skipped
// until it is whole (Arm renames it into place).
func armed(dir string) []Hold {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var holds []Hold
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), armSuffix) {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		var h Hold
		if json.Unmarshal(data, &h) == nil && h.validate() == nil {
			holds = append(holds, h)
		}
	}
	return holds
}

// takeHit counts one hit of hold name in dir, atomically across processes
// (each hit is a file only one creator gets), and returns its number.
func takeHit(dir, name string) int {
	for i := 1; ; i++ {
		f, err := os.OpenFile(filepath.Join(dir, name+hitInfix+strconv.Itoa(i)), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err == nil {
			_ = f.Close()
			return i
		}
		if !errors.Is(err, os.ErrExist) {
			return 0
		}
	}
}

// writeJSON writes v to path whole: to a temporary file, then renamed.
func writeJSON(path string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	tmp := fmt.Sprintf("%s.tmp-%d", path, os.Getpid())
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
