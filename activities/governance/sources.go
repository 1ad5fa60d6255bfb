package governance

import (
	"time"

	"github.com/flinkmaint/flinkmaint/activities/core"
)

// restoreSources finds everything that could restore from a snapshot:
// live jobs on every cluster, ended and failed restores, flinkmaint's own
// runs, the operator's records, reference roots and every spelling of a
// path. Governance keeps what any of them needs.
type restoreSources struct {
	Flink    core.FlinkClients
	Storage  core.Storage
	Operator core.OperatorControl
	Runs     core.RunRecords
	Drill    core.DrillSettings
	Cleanup  core.CleanupSettings
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// PollInterval between looks at a job whose state Flink cannot give
	// yet; LiveReadWait how long it is asked for again.
	PollInterval, LiveReadWait time.Duration
}

func (s restoreSources) lineage() core.Lineage {
	return core.Lineage{Flink: s.Flink, Storage: s.Storage, Now: s.Now}
}

func (a *Activities) sources() restoreSources {
	return restoreSources{Flink: a.Flink, Storage: a.Storage, Operator: a.Operator, Runs: a.Runs, Drill: a.Drill, Cleanup: a.Cleanup,
		Now: a.Now, PollInterval: a.PollInterval, LiveReadWait: a.LiveReadWait}
}
