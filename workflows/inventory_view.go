package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/flinkmaint/flinkmaint/activities/doctor"
)

// InventoryViewWorkflowType is the type name of InventoryViewWorkflow.
const InventoryViewWorkflowType = "InventoryView"

// KindInventory is SearchAttrKind of an inventory view run.
const KindInventory = "inventory"

// InventoryViewID returns the ID of an inventory view run; nonce makes it
// unique.
func InventoryViewID(nonce string) string { return "inventory/" + nonce }

// InventoryViewWorkflow describes the fleet once, as a worker sees it, for
// `flinkmaint inventory`: it reads only, and what it cannot see is a
// finding in the view, so nothing is retried.
func InventoryViewWorkflow(ctx workflow.Context, in doctor.DescribeInventoryInput) (doctor.InventoryView, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		// Each cluster is asked with the Flink client's own request bound;
		// this bounds a whole fleet.
		StartToCloseTimeout: 5 * time.Minute,
		HeartbeatTimeout:    time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
	})
	var a *doctor.Activities
	var view doctor.InventoryView
	err := workflow.ExecuteActivity(ctx, a.DescribeInventory, in).Get(ctx, &view)
	return view, err
}
