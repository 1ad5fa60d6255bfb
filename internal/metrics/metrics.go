// Package metrics owns the worker's Prometheus registry: the Temporal SDK's
// metrics (through tally's Prometheus reporter) and flinkmaint's own.
package metrics

import (
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/uber-go/tally/v4"
	tallyprom "github.com/uber-go/tally/v4/prometheus"
	"go.temporal.io/sdk/client"
	sdktally "go.temporal.io/sdk/contrib/tally"
)

// Namespace prefixes flinkmaint's own metric names.
const Namespace = "flinkmaint"

// Metrics bundles the registry, the SDK handler and the project's metrics.
type Metrics struct {
	Registry *prometheus.Registry
	// SDK goes into client.Options.MetricsHandler.
	SDK client.MetricsHandler
	// BuildInfo is 1, labelled with the version, so dashboards see rollouts.
	BuildInfo *prometheus.GaugeVec
	// Governance receives the governance activities' measurements.
	Governance *Governance

	scope io.Closer
}

// New creates a registry with Go runtime, process, SDK and project metrics.
func New(version, commit string) (*Metrics, error) {
	reg := prometheus.NewRegistry()
	if err := reg.Register(collectors.NewGoCollector()); err != nil {
		return nil, fmt.Errorf("metrics: go collector: %w", err)
	}
	if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return nil, fmt.Errorf("metrics: process collector: %w", err)
	}
	var regErr error
	reporter := tallyprom.NewReporter(tallyprom.Options{
		Registerer:       reg,
		DefaultTimerType: tallyprom.HistogramTimerType,
		OnRegisterError:  func(err error) { regErr = err },
	})
	scope, closer := tally.NewRootScope(tally.ScopeOptions{
		CachedReporter:  reporter,
		Separator:       tallyprom.DefaultSeparator,
		SanitizeOptions: &sdktally.PrometheusSanitizeOptions,
	}, time.Second)
	if regErr != nil {
		return nil, fmt.Errorf("metrics: sdk reporter: %w", regErr)
	}
	m := &Metrics{
		Registry: reg,
		SDK:      sdktally.NewMetricsHandler(sdktally.NewPrometheusNamingScope(scope)),
		BuildInfo: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: Namespace, Name: "build_info", Help: "Always 1; the version and commit labels name the running build.",
		}, []string{"version", "commit"}),
		scope: closer,
	}
	if err := reg.Register(m.BuildInfo); err != nil {
		return nil, fmt.Errorf("metrics: build_info: %w", err)
	}
	m.BuildInfo.WithLabelValues(version, commit).Set(1)
	gov, err := NewGovernance(reg)
	if err != nil {
		return nil, err
	}
	m.Governance = gov
	return m, nil
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry})
}

// Close flushes and stops the SDK metrics scope.
func (m *Metrics) Close() error { return m.scope.Close() }

// Governance holds the metrics of cleanup and quota watching. It
// implements activities.GovernanceMetrics.
type Governance struct {
	QuotaUtilisation   *prometheus.GaugeVec
	PlannedFiles       *prometheus.GaugeVec
	PlannedBytes       *prometheus.GaugeVec
	KeptUnparseable    *prometheus.GaugeVec
	ReclaimedFiles     *prometheus.CounterVec
	ReclaimedBytes     *prometheus.CounterVec
	RestoredFiles      *prometheus.CounterVec
	RestoredBytes      *prometheus.CounterVec
	PlannedObjects     *prometheus.GaugeVec
	RemovedObjects     *prometheus.CounterVec
	LastSuccessSeconds *prometheus.GaugeVec
	SavepointsTaken    *prometheus.GaugeVec
	SavepointsFailed   *prometheus.GaugeVec
	UsageFiles         *prometheus.GaugeVec
	UsageBytes         *prometheus.GaugeVec
	UsageNamespace     *prometheus.GaugeVec
	DrillLastSuccess   *prometheus.GaugeVec
	DrillPassed        *prometheus.GaugeVec
	DrillFailed        *prometheus.GaugeVec
	// Rehearsals counts compatibility rehearsals by verdict.
	Rehearsals    *prometheus.CounterVec
	Notifications *prometheus.CounterVec
	// TenantLastSuccess is LastSuccessSeconds per tenant of the run's
	// scope: a tenant left out of every scheduled run shows as stale.
	TenantLastSuccess *prometheus.GaugeVec
	// Decisions are the decisions runs wait on, from their notices.
	Decisions *Decisions
}

// NewGovernance creates the governance metrics on reg.
func NewGovernance(reg prometheus.Registerer) (*Governance, error) {
	g := &Governance{
		QuotaUtilisation: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Name: "quota_utilisation_percent",
			Help: "Latest quota use of a tenant root in percent, per dimension (namespace: files+dirs, space: bytes after replication)."},
			[]string{"tenant", "dimension"}),
		PlannedFiles: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Name: "cleanup_planned_files",
			Help: "Files the latest cleanup plan would reclaim, per tenant."}, []string{"tenant"}),
		PlannedBytes: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Name: "cleanup_planned_bytes",
			Help: "Bytes the latest cleanup plan would reclaim, per tenant."}, []string{"tenant"}),
		KeptUnparseable: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Name: "cleanup_kept_unparseable_items",
			Help: "Items the latest plan kept because a _metadata could not be parsed, per tenant."}, []string{"tenant"}),
		ReclaimedFiles: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "cleanup_reclaimed_files_total",
			Help: "Files moved to trash or deleted by cleanup runs, per tenant."}, []string{"tenant"}),
		ReclaimedBytes: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "cleanup_reclaimed_bytes_total",
			Help: "Bytes moved to trash or deleted by cleanup runs, per tenant."}, []string{"tenant"}),
		RestoredFiles: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "cleanup_restored_files_total",
			Help: "Files put back from the trash by restores (governance restore), per tenant."}, []string{"tenant"}),
		RestoredBytes: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "cleanup_restored_bytes_total",
			Help: "Bytes put back from the trash by restores (governance restore), per tenant."}, []string{"tenant"}),
		PlannedObjects: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Name: "cleanup_planned_kubernetes_objects",
			Help: "Kubernetes leftovers (TaskManagers, idle JobManagers, HA ConfigMaps) the latest cleanup plan would delete, per tenant."}, []string{"tenant"}),
		RemovedObjects: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "cleanup_removed_kubernetes_objects_total",
			Help: "Kubernetes leftovers moved to trash or deleted by cleanup runs, per tenant."}, []string{"tenant"}),
		LastSuccessSeconds: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Name: "governance_last_success_timestamp_seconds",
			Help: "Unix time of the last successful governance operation (plan, execute, purge, sample)."}, []string{"operation"}),
		TenantLastSuccess: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Name: "governance_tenant_last_success_timestamp_seconds",
			Help: "Unix time of the last successful governance operation (plan, usage, sample, scheduled-savepoints) whose scope held the tenant."},
			[]string{"operation", "tenant"}),
		SavepointsTaken: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Name: "scheduled_savepoints_taken",
			Help: "Savepoints the latest scheduled savepoint run took, verified and catalogued, per tenant."}, []string{"tenant"}),
		SavepointsFailed: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Name: "scheduled_savepoints_failed",
			Help: "Jobs whose savepoint failed in the latest scheduled savepoint run, per tenant (the jobs keep running); alert on > 0."}, []string{"tenant"}),
		UsageFiles: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Name: "usage_files",
			Help: "Files under a tenant root at its latest usage sample, per kind (checkpoints, shared, taskowned, savepoints, ha, trash, flinkmaint, structure, unknown)."},
			[]string{"tenant", "kind"}),
		UsageBytes: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Name: "usage_bytes",
			Help: "Bytes (before replication) under a tenant root at its latest usage sample, per kind."}, []string{"tenant", "kind"}),
		UsageNamespace: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Name: "usage_namespace",
			Help: "Files plus directories under a tenant root at its latest usage sample, per kind: what the namespace quota counts."}, []string{"tenant", "kind"}),
		DrillLastSuccess: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Name: "restore_drill_last_success_timestamp_seconds",
			Help: "Unix time of the tenant's last restore drill run in which every drilled snapshot passed; alert when it grows old."}, []string{"tenant"}),
		DrillPassed: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Name: "restore_drill_passed",
			Help: "Snapshots that passed the tenant's latest restore drill run."}, []string{"tenant"}),
		DrillFailed: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Name: "restore_drill_failed",
			Help: "Snapshots that failed the tenant's latest restore drill run (missing files, no restore); alert on > 0."}, []string{"tenant"}),
		Rehearsals: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "rehearsals_total",
			Help: "Compatibility rehearsals (a snapshot restored with a job's new version on a drill cluster), per tenant, target Flink version and verdict (compatible, incompatible, inconclusive, not-rehearsed)."},
			[]string{"tenant", "flink_version", "verdict"}),
		Notifications: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "notifications_total",
			Help: "Events delivered to a notification sink, by outcome (delivered, failed after its retries); alert on failed."}, []string{"sink", "kind", "outcome"}),
		Decisions: NewDecisions(),
	}
	for _, c := range []prometheus.Collector{g.QuotaUtilisation, g.PlannedFiles, g.PlannedBytes, g.KeptUnparseable,
		g.ReclaimedFiles, g.ReclaimedBytes, g.RestoredFiles, g.RestoredBytes, g.PlannedObjects, g.RemovedObjects, g.LastSuccessSeconds, g.TenantLastSuccess, g.SavepointsTaken, g.SavepointsFailed,
		g.UsageFiles, g.UsageBytes, g.UsageNamespace, g.DrillLastSuccess, g.DrillPassed, g.DrillFailed, g.Rehearsals, g.Notifications, g.Decisions} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("metrics: governance: %w", err)
		}
	}
	return g, nil
}

// Notified counts one delivery of an event to a sink.
func (g *Governance) Notified(sink, kind string, delivered bool) {
	outcome := "delivered"
	if !delivered {
		outcome = "failed"
	}
	g.Notifications.WithLabelValues(sink, kind, outcome).Inc()
}

// QuotaSampled records a tenant's utilisation of one quota dimension.
func (g *Governance) QuotaSampled(tenant, dimension string, percent float64) {
	g.QuotaUtilisation.WithLabelValues(tenant, dimension).Set(percent)
}

// CleanupPlanned records the latest plan of a tenant.
func (g *Governance) CleanupPlanned(tenant string, files, bytes, unparseable int64) {
	g.PlannedFiles.WithLabelValues(tenant).Set(float64(files))
	g.PlannedBytes.WithLabelValues(tenant).Set(float64(bytes))
	g.KeptUnparseable.WithLabelValues(tenant).Set(float64(unparseable))
}

// CleanupReclaimed adds what a run reclaimed for a tenant.
func (g *Governance) CleanupReclaimed(tenant string, files, bytes int64) {
	g.ReclaimedFiles.WithLabelValues(tenant).Add(float64(files))
	g.ReclaimedBytes.WithLabelValues(tenant).Add(float64(bytes))
}

// CleanupRestored adds what a restore put back for a tenant.
func (g *Governance) CleanupRestored(tenant string, files, bytes int64) {
	g.RestoredFiles.WithLabelValues(tenant).Add(float64(files))
	g.RestoredBytes.WithLabelValues(tenant).Add(float64(bytes))
}

// CleanupObjectsPlanned records the Kubernetes objects of the latest plan.
func (g *Governance) CleanupObjectsPlanned(tenant string, objects int64) {
	g.PlannedObjects.WithLabelValues(tenant).Set(float64(objects))
}

// CleanupObjectsRemoved adds the Kubernetes objects a run removed.
func (g *Governance) CleanupObjectsRemoved(tenant string, objects int64) {
	g.RemovedObjects.WithLabelValues(tenant).Add(float64(objects))
}

// UsageSampled records a tenant's files and bytes of one kind.
func (g *Governance) UsageSampled(tenant, kind string, files, bytes int64) {
	g.UsageFiles.WithLabelValues(tenant, kind).Set(float64(files))
	g.UsageBytes.WithLabelValues(tenant, kind).Set(float64(bytes))
}

// UsageNamespaceSampled records a tenant's files plus dirs of one kind.
func (g *Governance) UsageNamespaceSampled(tenant, kind string, namespace int64) {
	g.UsageNamespace.WithLabelValues(tenant, kind).Set(float64(namespace))
}

// Succeeded records when an operation last succeeded.
func (g *Governance) Succeeded(operation string, at time.Time) {
	g.LastSuccessSeconds.WithLabelValues(operation).Set(float64(at.UnixNano()) / 1e9)
}

// SucceededFor records when an operation last succeeded for each tenant
// of its scope.
func (g *Governance) SucceededFor(operation string, tenants []string, at time.Time) {
	for _, t := range tenants {
		g.TenantLastSuccess.WithLabelValues(operation, t).Set(float64(at.UnixNano()) / 1e9)
	}
}

// DecisionNotified records a notice of a decision a run waits on; see
// Decisions.Notified.
func (g *Governance) DecisionNotified(kind, decision, run string, since, at time.Time, answered bool, every time.Duration) {
	g.Decisions.Notified(kind, decision, run, since, at, answered, every)
}

// Rehearsed counts one compatibility rehearsal.
func (g *Governance) Rehearsed(tenant, flinkVersion, verdict string) {
	g.Rehearsals.WithLabelValues(tenant, flinkVersion, verdict).Inc()
}

// ScheduledSavepoints records a tenant's latest scheduled savepoint run.
func (g *Governance) ScheduledSavepoints(tenant string, taken, failed int64) {
	g.SavepointsTaken.WithLabelValues(tenant).Set(float64(taken))
	g.SavepointsFailed.WithLabelValues(tenant).Set(float64(failed))
}

// RestoreDrills records a tenant's latest drill run; a run with passes and
// no failure moves the last-success time.
func (g *Governance) RestoreDrills(tenant string, passed, failed int64, at time.Time) {
	g.DrillPassed.WithLabelValues(tenant).Set(float64(passed))
	g.DrillFailed.WithLabelValues(tenant).Set(float64(failed))
	if failed == 0 && passed > 0 {
		g.DrillLastSuccess.WithLabelValues(tenant).Set(float64(at.UnixNano()) / 1e9)
	}
}
