package windows

import (
	"strings"
	"testing"
	"time"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/internal/acttest"
	"github.com/flinkmaint/flinkmaint/internal/flink"
)

// A ForSt job is stopped with a NATIVE savepoint whatever was asked, and
// the result says why; any other job gets what was asked; NATIVE asked
// needs no look at the job; a config that cannot be read fails the stop
// before anything is triggered, retryably when Flink may answer later.
func TestStopWithSavepointTakesNativeOfAForStJob(t *testing.T) {
	done := []flink.OperationStatus{{State: flink.OperationCompleted, Location: "hdfs://nn/sp/savepoint-1"}}
	job := core.JobTarget{Key: "c/j", JobID: "j1", SavepointDir: "hdfs://nn/sp"}
	for _, tc := range []struct {
		name, backend, asked string
		configErr            error
		want                 flink.SavepointFormat
		wantNote             bool
		wantConfigCalls      int
		wantErr              string
		wantRetryable        bool
	}{
		{name: "forst default", backend: "ForStStateBackend", want: flink.SavepointFormatNative, wantNote: true, wantConfigCalls: 1},
		{name: "forst canonical", backend: "ForStStateBackend", asked: "CANONICAL", want: flink.SavepointFormatNative, wantNote: true, wantConfigCalls: 1},
		{name: "rocksdb default", backend: "EmbeddedRocksDBStateBackend", want: flink.SavepointFormatCanonical, wantConfigCalls: 1},
		{name: "hashmap canonical", backend: "HashMapStateBackend", asked: "CANONICAL", want: flink.SavepointFormatCanonical, wantConfigCalls: 1},
		{name: "native asked", backend: "ForStStateBackend", asked: "NATIVE", want: flink.SavepointFormatNative},
		{name: "no checkpointing", configErr: flink.ErrCheckpointingDisabled, want: flink.SavepointFormatCanonical, wantConfigCalls: 1},
		{name: "config unavailable", configErr: &flink.Error{Op: "checkpoint config", StatusCode: 503, Reason: flink.ErrorReasonUnavailable, Retryable: true},
			wantConfigCalls: 1, wantErr: "state backend of c/j", wantRetryable: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ff := &acttest.Flink{Statuses: done, StateBackend: tc.backend, ConfigErr: tc.configErr}
			a := &Activities{Flink: acttest.OneClient{C: ff}, PollInterval: time.Millisecond}
			var out core.StopWithSavepointResult
			err := acttest.Run(t, a, a.StopWithSavepoint, core.StopWithSavepointInput{Job: job, TriggerID: strings.Repeat("a", 32), Format: tc.asked}, &out)
			if ff.ConfigCalls != tc.wantConfigCalls {
				t.Errorf("checkpoint config read %d times, want %d", ff.ConfigCalls, tc.wantConfigCalls)
			}
			if tc.wantErr != "" {
				_, nonRetryable := acttest.ErrType(t, err)
				if !strings.Contains(err.Error(), tc.wantErr) || nonRetryable == tc.wantRetryable || len(ff.StopFormats) != 0 {
					t.Fatalf("error %v (non-retryable %v), stops %v; want %q, retryable %v, nothing stopped", err, nonRetryable, ff.StopFormats, tc.wantErr, tc.wantRetryable)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(ff.StopFormats) != 1 || ff.StopFormats[0] != tc.want || out.Format != string(tc.want) {
				t.Fatalf("stop asked for %v, result format %q; want %s", ff.StopFormats, out.Format, tc.want)
			}
			if (out.FormatNote != "") != tc.wantNote || (tc.wantNote && !strings.Contains(out.FormatNote, "ForSt")) {
				t.Fatalf("format note %q; want one: %v", out.FormatNote, tc.wantNote)
			}
		})
	}
}

func TestIsForSt(t *testing.T) {
	for name, want := range map[string]bool{"ForStStateBackend": true, "forst": true, "EmbeddedRocksDBStateBackend": false, "HashMapStateBackend": false, "": false} {
		if core.IsForSt(name) != want {
			t.Errorf("isForSt(%q) = %v, want %v", name, !want, want)
		}
	}
}
