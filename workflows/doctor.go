package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/flinkmaint/flinkmaint/activities/doctor"
)

// WorkerDoctorWorkflowType is the type name of WorkerDoctorWorkflow.
const WorkerDoctorWorkflowType = "WorkerDoctor"

// KindDoctor is SearchAttrKind of a worker doctor run.
const KindDoctor = "doctor"

// WorkerDoctorID returns the ID of a doctor run; nonce makes it unique.
func WorkerDoctorID(nonce string) string { return "doctor/" + nonce }

// WorkerDoctorWorkflow runs the doctor activity once on a worker: what
// `flinkmaint doctor` cannot see from where it runs (storage, Kerberos,
// Kubernetes RBAC, Flink clusters, notification sinks), seen from the
// worker. A finding is a result, not a failure, so nothing is retried.
func WorkerDoctorWorkflow(ctx workflow.Context, in doctor.DoctorInput) (doctor.DoctorResult, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		// Storage, Kubernetes and every cluster are probed with their own
		// bounds inside; this bounds them all.
		StartToCloseTimeout: 3 * time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
	})
	var a *doctor.Activities
	var res doctor.DoctorResult
	err := workflow.ExecuteActivity(ctx, a.Doctor, in).Get(ctx, &res)
	return res, err
}
