package app

import (
	"github.com/flinkmaint/flinkmaint/activities/capacity"
	"github.com/flinkmaint/flinkmaint/activities/doctor"
	"github.com/flinkmaint/flinkmaint/activities/drills"
	"github.com/flinkmaint/flinkmaint/activities/governance"
	"github.com/flinkmaint/flinkmaint/activities/oncall"
	"github.com/flinkmaint/flinkmaint/activities/upgrades"
	"github.com/flinkmaint/flinkmaint/activities/windows"
)

// Families are the activities of every family, each built from the one
// set of ports and settings the worker's configuration gives and holding
// only the fields it uses.
type Families struct {
	Doctor     *doctor.Activities
	OnCall     *oncall.Activities
	Capacity   *capacity.Activities
	Drills     *drills.Activities
	Upgrades   *upgrades.Activities
	Governance *governance.Activities
	Windows    *windows.Activities
}

// NewFamilies builds every family over p. Call it after the last change
// to p: the families copy its fields.
func NewFamilies(p *Ports) Families {
	return Families{
		Doctor: &doctor.Activities{Identity: p.Identity, Worker: p.Worker, Now: p.Now,
			Inventory: p.Inventory, Flink: p.Flink, Storage: p.Storage, Kubernetes: p.Kubernetes,
			KubeAccess: p.KubeAccess, Notifier: p.Notifier, Cleanup: p.Cleanup, Drill: p.Drill},
		OnCall: &oncall.Activities{Notifier: p.Notifier, Metrics: p.Metrics, Freezes: p.Freezes, Now: p.Now},
		Capacity: &capacity.Activities{Storage: p.Storage, Cleanup: p.Cleanup, Inventory: p.Inventory, Flink: p.Flink,
			Metrics: p.Metrics, Now: p.Now},
		Drills: &drills.Activities{Drill: p.Drill, Flink: p.Flink, Storage: p.Storage, Inventory: p.Inventory,
			Metrics: p.Metrics, Now: p.Now, PollInterval: p.PollInterval},
		Upgrades: &upgrades.Activities{Flink: p.Flink, Operator: p.Operator, Storage: p.Storage, Inventory: p.Inventory,
			Drill: p.Drill, Metrics: p.Metrics, Now: p.Now,
			PollInterval: p.PollInterval, OperationPollMin: p.OperationPollMin, FailoverWait: p.FailoverWait},
		Governance: &governance.Activities{Storage: p.Storage, Inventory: p.Inventory, Flink: p.Flink,
			Operator: p.Operator, Orphans: p.Orphans, ReadOnlyKubeClusters: p.ReadOnlyKubeClusters, Runs: p.Runs,
			Cleanup: p.Cleanup, Drill: p.Drill, Metrics: p.Metrics, Now: p.Now,
			PollInterval: p.PollInterval, LiveReadWait: p.LiveReadWait},
		Windows: &windows.Activities{Flink: p.Flink, Storage: p.Storage, Inventory: p.Inventory,
			Kubernetes: p.Kubernetes, Operator: p.Operator, Metrics: p.Metrics, Now: p.Now,
			PollInterval: p.PollInterval, OperationPollMin: p.OperationPollMin, FailoverWait: p.FailoverWait},
	}
}
