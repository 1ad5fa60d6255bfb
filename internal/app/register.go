// Package app registers every workflow and activity of flinkmaint on a
// worker. It is the one place that lists them, so the worker binary, the
// integration tests and the replayer see exactly the same set.
package app

import (
	"go.temporal.io/sdk/workflow"

	"github.com/flinkmaint/flinkmaint/workflows"
)

// WorkflowRegistry is the part of worker.Registry (and the replayer) that
// registers workflows.
type WorkflowRegistry interface {
	RegisterWorkflowWithOptions(w interface{}, options workflow.RegisterOptions)
}

// ActivityRegistry is the part of worker.Registry that registers activities.
type ActivityRegistry interface {
	RegisterActivity(a interface{})
}

// RegisterWorkflows registers every workflow under its explicit type name.
func RegisterWorkflows(r WorkflowRegistry) {
	r.RegisterWorkflowWithOptions(workflows.PingWorkflow, workflow.RegisterOptions{Name: workflows.PingWorkflowType})
	r.RegisterWorkflowWithOptions(workflows.WorkerDoctorWorkflow, workflow.RegisterOptions{Name: workflows.WorkerDoctorWorkflowType})
	r.RegisterWorkflowWithOptions(workflows.InventoryViewWorkflow, workflow.RegisterOptions{Name: workflows.InventoryViewWorkflowType})
	r.RegisterWorkflowWithOptions(workflows.MaintenanceWindowWorkflow, workflow.RegisterOptions{Name: workflows.MaintenanceWindowWorkflowType})
	r.RegisterWorkflowWithOptions(workflows.WindowPlanWorkflow, workflow.RegisterOptions{Name: workflows.WindowPlanWorkflowType})
	r.RegisterWorkflowWithOptions(workflows.JobSavepointWorkflow, workflow.RegisterOptions{Name: workflows.JobSavepointWorkflowType})
	r.RegisterWorkflowWithOptions(workflows.JobRestartWorkflow, workflow.RegisterOptions{Name: workflows.JobRestartWorkflowType})
	r.RegisterWorkflowWithOptions(workflows.JobUpgradeWorkflow, workflow.RegisterOptions{Name: workflows.JobUpgradeWorkflowType})
	r.RegisterWorkflowWithOptions(workflows.GovernanceWorkflow, workflow.RegisterOptions{Name: workflows.GovernanceWorkflowType})
	r.RegisterWorkflowWithOptions(workflows.QuotaWatchWorkflow, workflow.RegisterOptions{Name: workflows.QuotaWatchWorkflowType})
	r.RegisterWorkflowWithOptions(workflows.SavepointCatalogWorkflow, workflow.RegisterOptions{Name: workflows.SavepointCatalogWorkflowType})
	r.RegisterWorkflowWithOptions(workflows.ScheduledSavepointsWorkflow, workflow.RegisterOptions{Name: workflows.ScheduledSavepointsWorkflowType})
	r.RegisterWorkflowWithOptions(workflows.UsageWorkflow, workflow.RegisterOptions{Name: workflows.UsageWorkflowType})
	r.RegisterWorkflowWithOptions(workflows.RestoreDrillWorkflow, workflow.RegisterOptions{Name: workflows.RestoreDrillWorkflowType})
	r.RegisterWorkflowWithOptions(workflows.JobDrillWorkflow, workflow.RegisterOptions{Name: workflows.JobDrillWorkflowType})
	r.RegisterWorkflowWithOptions(workflows.JobRehearsalWorkflow, workflow.RegisterOptions{Name: workflows.JobRehearsalWorkflowType})
	r.RegisterWorkflowWithOptions(workflows.TenantLockWorkflow, workflow.RegisterOptions{Name: workflows.TenantLockWorkflowType})
	r.RegisterWorkflowWithOptions(workflows.GovernanceRestoreWorkflow, workflow.RegisterOptions{Name: workflows.GovernanceRestoreWorkflowType})
}

// RegisterActivities registers the activities of every family, each built
// over the ports and settings of acts; an activity is named after its
// method, and no two families share a method name.
func RegisterActivities(r ActivityRegistry, acts *Ports) {
	f := NewFamilies(acts)
	r.RegisterActivity(f.Doctor)
	r.RegisterActivity(f.OnCall)
	r.RegisterActivity(f.Capacity)
	r.RegisterActivity(f.Drills)
	r.RegisterActivity(f.Upgrades)
	r.RegisterActivity(f.Governance)
	r.RegisterActivity(f.Windows)
}

// Register registers workflows and activities on a worker.
func Register(r interface {
	WorkflowRegistry
	ActivityRegistry
}, acts *Ports) {
	RegisterWorkflows(r)
	RegisterActivities(r, acts)
}
