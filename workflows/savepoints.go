package workflows

import (
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/flinkmaint/flinkmaint/activities/governance"
)

// SavepointCatalogWorkflowType runs one savepoint catalog operation on a
// worker, which holds the storage credentials: `flinkmaint savepoints list`
// and `savepoints adopt`.
const SavepointCatalogWorkflowType = "SavepointCatalog"

// KindSavepoints marks SavepointCatalog runs in SearchAttrKind.
const KindSavepoints = "savepoints"

// SavepointCatalogWorkflowID returns the ID of one run; nonce makes it
// unique.
func SavepointCatalogWorkflowID(nonce string) string { return "savepoints/" + nonce }

// SavepointCatalogInput holds exactly one operation.
type SavepointCatalogInput struct {
	List  *governance.ListSavepointsInput  `json:"list,omitempty"`
	Adopt *governance.AdoptSavepointsInput `json:"adopt,omitempty"`
}

// SavepointCatalogResult is the operation's result.
type SavepointCatalogResult struct {
	List  *governance.ListSavepointsResult  `json:"list,omitempty"`
	Adopt *governance.AdoptSavepointsResult `json:"adopt,omitempty"`
}

// savepointCatalogOptions: a listing parses every savepoint's _metadata.
func savepointCatalogOptions() workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Minute,
		RetryPolicy:         standardRetry(3),
	}
}

// SavepointCatalogWorkflow lists or adopts savepoints through the worker.
func SavepointCatalogWorkflow(ctx workflow.Context, in SavepointCatalogInput) (SavepointCatalogResult, error) {
	if (in.List == nil) == (in.Adopt == nil) {
		return SavepointCatalogResult{}, newInvalidInputError("savepoint catalog input needs exactly one of list and adopt")
	}
	ctx = workflow.WithActivityOptions(ctx, savepointCatalogOptions())
	var a *governance.Activities
	var out SavepointCatalogResult
	if in.List != nil {
		var res governance.ListSavepointsResult
		if err := workflow.ExecuteActivity(ctx, a.ListSavepoints, *in.List).Get(ctx, &res); err != nil {
			return out, err
		}
		out.List = &res
		return out, nil
	}
	var res governance.AdoptSavepointsResult
	if err := workflow.ExecuteActivity(ctx, a.AdoptSavepoints, *in.Adopt).Get(ctx, &res); err != nil {
		return out, err
	}
	out.Adopt = &res
	return out, nil
}
