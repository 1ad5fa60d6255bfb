package acttest

import (
	"context"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/internal/flink"
)

// Flink is a scripted Flink REST port for error paths that a real
// cluster cannot be made to produce on demand.
type Flink struct {
	core.FlinkAPI // unused methods panic, so a test notices an unexpected call
	Jobs          []flink.JobOverview
	Statuses      []flink.OperationStatus
	Details       []flink.JobDetails
	// detailsErrs, when set, are JobDetails' errors, indexed like details.
	DetailsErrs []error
	Stats       flink.CheckpointingStatistics
	// statsByJob, when set, are the statistics of each job instead.
	StatsByJob map[string]flink.CheckpointingStatistics
	calls      int
	// stateBackend is what the job's checkpoint config names;
	// configErr, when set, is the config endpoint's error.
	StateBackend string
	ConfigErr    error
	ConfigCalls  int
	// stopFormats are the formats stop-with-savepoint was asked for.
	StopFormats []flink.SavepointFormat
}

func (f *Flink) CheckpointConfig(context.Context, string) (flink.CheckpointConfig, error) {
	f.ConfigCalls++
	if f.ConfigErr != nil {
		return flink.CheckpointConfig{}, f.ConfigErr
	}
	return flink.CheckpointConfig{StateBackend: f.StateBackend}, nil
}

func (f *Flink) ListJobs(context.Context) ([]flink.JobOverview, error) { return f.Jobs, nil }

func (f *Flink) StopWithSavepoint(_ context.Context, jobID string, req flink.StopRequest) (flink.Trigger, error) {
	f.StopFormats = append(f.StopFormats, req.FormatType)
	return flink.Trigger{JobID: jobID, TriggerID: req.TriggerID}, nil
}

func (f *Flink) SavepointStatus(context.Context, string, string) (flink.OperationStatus, error) {
	s := f.Statuses[min(f.calls, len(f.Statuses)-1)]
	f.calls++
	return s, nil
}

func (f *Flink) JobDetails(context.Context, string) (flink.JobDetails, error) {
	i := f.calls
	f.calls++
	if len(f.DetailsErrs) > 0 {
		if err := f.DetailsErrs[min(i, len(f.DetailsErrs)-1)]; err != nil {
			return flink.JobDetails{}, err
		}
	}
	return f.Details[min(i, len(f.Details)-1)], nil
}

func (f *Flink) Checkpoints(_ context.Context, jobID string) (flink.CheckpointingStatistics, error) {
	if f.StatsByJob != nil {
		return f.StatsByJob[jobID], nil
	}
	return f.Stats, nil
}

func (f *Flink) JobExceptions(context.Context, string, int) (flink.JobExceptions, error) {
	return flink.JobExceptions{}, nil
}

// OneClient hands out C for every cluster.
type OneClient struct{ C core.FlinkAPI }

func (o OneClient) For(context.Context, string) (core.FlinkAPI, error) { return o.C, nil }
