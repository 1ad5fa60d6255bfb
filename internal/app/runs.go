package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/workflows"
)

// TemporalRuns reads the snapshots flinkmaint's runs in flight hold from
// Temporal: the open windows and upgrades of its namespace, each asked for
// its state.
type TemporalRuns struct {
	// Client asks Temporal; nil uses the client of the worker running the
	// activity.
	Client client.Client
}

var _ core.RunRecords = TemporalRuns{}

// runsInFlightQuery selects the runs that can hold a snapshot to restore
// from. Drills are not among them: their jobs run on the drill cluster,
// which is read as a live cluster.
var runsInFlightQuery = fmt.Sprintf("ExecutionStatus = 'Running' AND WorkflowType IN ('%s', '%s', '%s')",
	workflows.MaintenanceWindowWorkflowType, workflows.JobUpgradeWorkflowType, workflows.JobRehearsalWorkflowType)

// runQueryTimeout bounds one run's answer: a run that cannot answer fails
// the step (it is retried), it never counts as holding nothing.
const runQueryTimeout = 30 * time.Second

// SnapshotsInUse lists every open window's savepoints and every open
// upgrade's savepoints.
func (r TemporalRuns) SnapshotsInUse(ctx context.Context) ([]core.RunSnapshot, error) {
	c := r.Client
	if c == nil {
		c = activity.GetClient(ctx)
	}
	if c == nil {
		return nil, errors.New("no Temporal client to ask which runs are in flight: the activity must run on a worker")
	}
	var out []core.RunSnapshot
	var token []byte
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: runsInFlightQuery, NextPageToken: token})
		if err != nil {
			return nil, fmt.Errorf("list runs in flight (%s): %w", runsInFlightQuery, err)
		}
		for _, e := range resp.Executions {
			id, runID := e.GetExecution().GetWorkflowId(), e.GetExecution().GetRunId()
			held, err := runSnapshots(ctx, c, e.GetType().GetName(), id, runID)
			if err != nil {
				return nil, err
			}
			out = append(out, held...)
		}
		if token = resp.NextPageToken; len(token) == 0 {
			return out, nil
		}
	}
}

// runSnapshots asks one run for its state. A run that ended since the
// listing holds nothing.
func runSnapshots(ctx context.Context, c client.Client, workflowType, id, runID string) ([]core.RunSnapshot, error) {
	qctx, cancel := context.WithTimeout(ctx, runQueryTimeout)
	defer cancel()
	query := workflows.QueryStatus
	switch workflowType {
	case workflows.JobUpgradeWorkflowType:
		query = workflows.QueryUpgradeStatus
	case workflows.JobRehearsalWorkflowType:
		query = workflows.QueryRehearsalStatus
	}
	v, err := c.QueryWorkflow(qctx, id, runID, query)
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("ask %s %s which snapshots it holds: %w", workflowType, id, err)
	}
	var out []core.RunSnapshot
	add := func(path, what string) {
		if path != "" {
			out = append(out, core.RunSnapshot{Run: id, Path: path, What: what})
		}
	}
	switch workflowType {
	case workflows.MaintenanceWindowWorkflowType:
		var st workflows.WindowState
		if err := v.Get(&st); err != nil {
			return nil, fmt.Errorf("read the state of window %s: %w", id, err)
		}
		for _, j := range st.Jobs {
			add(j.SavepointPath, "window savepoint of job "+j.Target.JobID+" on "+j.Target.ClusterID)
		}
	case workflows.JobUpgradeWorkflowType:
		var st workflows.UpgradeState
		if err := v.Get(&st); err != nil {
			return nil, fmt.Errorf("read the state of upgrade %s: %w", id, err)
		}
		add(st.Savepoint, "pre-upgrade savepoint of job "+st.Job.JobID)
		add(st.RetiredSavepoint, "savepoint of the retired version of job "+st.Job.JobID)
		if st.Rollback != nil {
			add(st.Rollback.NewVersionSavepoint, "savepoint of the new version of job "+st.Job.JobID+" taken at rollback")
		}
	case workflows.JobRehearsalWorkflowType:
		var st workflows.RehearsalResult
		if err := v.Get(&st); err != nil {
			return nil, fmt.Errorf("read the state of rehearsal %s: %w", id, err)
		}
		add(st.Savepoint, "savepoint a rehearsal of "+st.Key+" restores a copy from")
	}
	return out, nil
}
