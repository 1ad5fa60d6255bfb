package activities

import (
	"github.com/flinkmaint/flinkmaint/activities/core"
)

func (a *Activities) catalog() core.Catalog {
	return core.Catalog{Inventory: a.Inventory, Storage: a.Storage, Now: a.Now}
}

func (a *Activities) lineage() core.Lineage {
	return core.Lineage{Flink: a.Flink, Storage: a.Storage, Now: a.Now}
}

func (a *Activities) jobs() core.Jobs {
	return core.Jobs{Inventory: a.Inventory, Flink: a.Flink, Storage: a.Storage, Now: a.Now,
		PollInterval: a.PollInterval, OperationPollMin: a.OperationPollMin, FailoverWait: a.FailoverWait}
}

func (a *Activities) operator() core.OperatorJobs {
	return core.OperatorJobs{Operator: a.Operator, PollInterval: a.PollInterval}
}

func (a *Activities) drillSite() core.DrillSite {
	return core.DrillSite{Drill: a.Drill, Storage: a.Storage}
}

func (a *Activities) documents() core.Documents { return core.Documents{Storage: a.Storage} }
