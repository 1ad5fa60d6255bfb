package governance

import (
	"context"
	"reflect"
	"testing"

	"github.com/flinkmaint/flinkmaint/activities/internal/acttest"
	"github.com/flinkmaint/flinkmaint/internal/flink"
)

// An ended job is evidence for the job dirs where it wrote: its cluster's
// checkpoint dir, and the dirs its own checkpoint history names (a job
// with a checkpoint dir of its own). Savepoints and failed checkpoints
// name no job dir.
func TestEndedJobsNameTheDirsTheirHistoryNames(t *testing.T) {
	const ended, running = "0123456789abcdef0123456789abcdef", "fedcba9876543210fedcba9876543210"
	f := &acttest.Flink{
		Jobs: []flink.JobOverview{{ID: ended, State: flink.JobFinished, EndTime: 1_700_000_000_000}, {ID: running, State: flink.JobRunning}},
		StatsByJob: map[string]flink.CheckpointingStatistics{ended: {
			Latest: flink.LatestCheckpoints{
				Completed: &flink.CheckpointStatistics{ID: 7, ExternalPath: "hdfs://nn:8020/own/ck/" + ended + "/chk-7/"},
				Savepoint: &flink.CheckpointStatistics{ID: 8, IsSavepoint: true, ExternalPath: "hdfs://nn:8020/sp/savepoint-012345-abc"},
			},
			History: []flink.CheckpointStatistics{
				{ID: 6, Status: "COMPLETED", ExternalPath: "hdfs://nn:8020/other/ck/" + ended + "/chk-6"},
				{ID: 5, Status: "FAILED", ExternalPath: "hdfs://nn:8020/failed/ck/" + ended + "/chk-5"},
				{ID: 8, Status: "COMPLETED", IsSavepoint: true, ExternalPath: "hdfs://nn:8020/sp/savepoint-012345-abc"},
			},
		}},
	}
	got := (&Activities{}).sources().endedJobs(context.Background(), f, f.Jobs)
	if len(got) != 1 || got[0].ID != ended || got[0].At.IsZero() {
		t.Fatalf("ended %+v; want job %s with its end time", got, ended)
	}
	want := []string{"hdfs://nn:8020/other/ck/" + ended, "hdfs://nn:8020/own/ck/" + ended}
	if !reflect.DeepEqual(got[0].Dirs, want) {
		t.Errorf("dirs %v; want %v", got[0].Dirs, want)
	}
}
