package workflows

import (
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/flinkmaint/flinkmaint/activities/capacity"
)

// UsageWorkflowType tells who fills each tenant's quota, through a worker,
// which holds the storage credentials: `flinkmaint usage`.
const UsageWorkflowType = "StorageUsage"

// KindUsage marks StorageUsage runs in SearchAttrKind.
const KindUsage = "usage"

// UsageWorkflowID returns the ID of one run; nonce makes it unique.
func UsageWorkflowID(nonce string) string { return "usage/" + nonce }

// usageOptions: one walk of every tenant root in scope, heartbeating
// while it walks; a retry walks again.
func usageOptions() workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout: time.Hour,
		HeartbeatTimeout:    2 * time.Minute,
		RetryPolicy:         standardRetry(3),
	}
}

// UsageWorkflow runs TenantUsage once and returns its result.
func UsageWorkflow(ctx workflow.Context, in capacity.TenantUsageInput) (capacity.TenantUsageResult, error) {
	if err := in.Validate(); err != nil {
		return capacity.TenantUsageResult{}, newInvalidInputError(err.Error())
	}
	var a *capacity.Activities
	var res capacity.TenantUsageResult
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, usageOptions()), a.TenantUsage, in).Get(ctx, &res)
	return res, err
}
