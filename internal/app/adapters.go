package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/internal/config"
	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/freeze"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/kube"
	"github.com/flinkmaint/flinkmaint/internal/notify"
	"github.com/flinkmaint/flinkmaint/internal/storage"
)

// NewPorts builds the adapters the configuration asks for and the ports
// every activities family is built from. The returned close releases
// connections.
func NewPorts(cfg config.Config, identity string) (*Ports, func() error, error) {
	// One guard serves every file system the resolver opens: plain roots
	// are bound to the default one, so they grant nothing on another.
	guard, err := storage.NewGuardOn(cfg.Storage.DefaultFS, cfg.Storage.WritableRoots...)
	if err != nil {
		return nil, nil, fmt.Errorf("storage.writableRoots: %w", err)
	}
	resolver := &storage.Resolver{
		DefaultFS:        cfg.Storage.DefaultFS,
		Guard:            guard,
		AuthorityAliases: cfg.Storage.AuthorityAliases,
		HDFS: storage.HDFSOptions{
			User: cfg.Storage.HDFSUser, HadoopConfDir: cfg.Storage.HadoopConfDir, Kerberos: cfg.Storage.Kerberos.Options(),
			RPCTimeout: cfg.Storage.RPCTimeout.D(), Connections: cfg.Storage.HDFSConnections, Guard: guard,
		},
	}
	acts := &Ports{
		Identity: identity,
		Storage:  resolver,
		Runs:     TemporalRuns{},
	}
	if cfg.Inventory.StaticFile != "" {
		acts.Inventory = StaticInventory{Path: cfg.Inventory.StaticFile}
	}
	if cfg.Inventory.Kubernetes != nil || len(cfg.Inventory.KubernetesClusters) > 0 {
		fleet, err := newKubeFleet(cfg)
		if err != nil {
			return nil, nil, err
		}
		acts.Inventory, acts.Kubernetes = fleet, KubeHealth{Fleet: fleet}
		acts.Operator = KubeOperator{Fleet: fleet}
		acts.Orphans = KubeOrphans{Fleet: fleet}
		acts.KubeAccess = KubeAccess{Fleet: fleet}
		for _, c := range fleet.clients {
			if c.ReadOnly() {
				if acts.ReadOnlyKubeClusters == nil {
					acts.ReadOnlyKubeClusters = map[string]bool{}
				}
				acts.ReadOnlyKubeClusters[c.Name()] = true
			}
		}
	}
	flinkClients := &FlinkClients{
		Options:   flink.Options{RequestTimeout: cfg.Flink.RequestTimeout.D(), UserAgent: "flinkmaint-worker"},
		Default:   cfg.Flink.REST,
		Drill:     cfg.Drill.RESTSettings(),
		Inventory: acts.Inventory,
	}
	acts.Flink = flinkClients
	if acts.Inventory != nil {
		acts.Inventory = flinkClients.Observing(acts.Inventory)
	}
	acts.Worker.WritableRoots = cfg.Storage.WritableRoots
	if k := cfg.Storage.Kerberos; k != nil {
		acts.Worker.KerberosPrincipal = k.Principal
		if acts.Worker.KerberosPrincipal == "" {
			acts.Worker.KerberosPrincipal = "the principal of ticket cache " + k.CCache
		}
	}
	acts.Cleanup = core.CleanupSettings{TrashRoot: cfg.Cleanup.TrashRoot, AuditRoot: cfg.Cleanup.AuditRoot, PlanDir: cfg.Cleanup.PlanDir,
		ReferenceRoots: cfg.Cleanup.ReferenceRoots, FailedRestoreHold: cfg.Cleanup.FailedRestoreHold.D()}
	acts.Drill = core.DrillSettings{ClusterRESTURL: cfg.Drill.ClusterRESTURL, Root: cfg.Drill.Root}
	for _, c := range cfg.Drill.Clusters {
		acts.Drill.Clusters = append(acts.Drill.Clusters, core.VersionDrillCluster{FlinkVersion: c.FlinkVersion, RESTURL: c.RESTURL})
	}
	if len(cfg.Freezes) > 0 {
		c, err := freeze.New(cfg.Freezes)
		if err != nil {
			return nil, nil, err
		}
		acts.Freezes = c
	}
	if len(cfg.Notify.Sinks) > 0 {
		n, err := notify.New(cfg.Notify.Config())
		if err != nil {
			return nil, nil, err
		}
		acts.Notifier = n
	}
	return acts, resolver.Close, nil
}

// StaticInventory reads the static inventory file on every discovery, so
// an edited file takes effect without restarting the worker.
type StaticInventory struct {
	Path string
}

var _ core.InventorySource = StaticInventory{}

// Discover loads and validates the file.
func (s StaticInventory) Discover(ctx context.Context) (inventory.Inventory, error) {
	st, err := inventory.LoadStatic(s.Path)
	if err != nil {
		return inventory.Inventory{}, err
	}
	return inventory.Inventory(st), nil
}

// KubeOperator adapts the fleet's clients to activities.OperatorControl,
// each call to the Kubernetes cluster of its object, and classifies their
// errors for the activities.
type KubeOperator struct {
	Fleet *KubeFleet
}

var _ core.OperatorControl = KubeOperator{}

// Suspend suspends ref with a savepoint; see kube.Client.Suspend.
func (k KubeOperator) Suspend(ctx context.Context, ref inventory.ObjectRef, opts core.OperatorWait) (core.OperatorSuspendResult, error) {
	c, err := k.Fleet.client(ref.KubeCluster)
	if err != nil {
		return core.OperatorSuspendResult{}, operatorError(err)
	}
	res, err := c.Suspend(ctx, ref, opts)
	if err != nil {
		return core.OperatorSuspendResult{}, operatorError(err)
	}
	return res, nil
}

// Resume resumes ref from savepointPath; see kube.Client.Resume.
func (k KubeOperator) Resume(ctx context.Context, ref inventory.ObjectRef, savepointPath string, opts core.OperatorWait) (core.OperatorResumeResult, error) {
	c, err := k.Fleet.client(ref.KubeCluster)
	if err != nil {
		return core.OperatorResumeResult{}, operatorError(err)
	}
	res, err := c.Resume(ctx, ref, savepointPath, opts)
	if err != nil {
		return core.OperatorResumeResult{}, operatorError(err)
	}
	return res, nil
}

// SpecChangeInverse reads what undoes change; see kube.Client.SpecChangeInverse.
func (k KubeOperator) SpecChangeInverse(ctx context.Context, ref inventory.ObjectRef, change inventory.JobSpecChange) (inventory.JobSpecChange, error) {
	c, err := k.Fleet.client(ref.KubeCluster)
	if err != nil {
		return inventory.JobSpecChange{}, operatorError(err)
	}
	inv, err := c.SpecChangeInverse(ctx, ref, change)
	return inv, operatorError(err)
}

// ChangeJobSpec changes a suspended job's spec; see kube.Client.ChangeJobSpec.
func (k KubeOperator) ChangeJobSpec(ctx context.Context, ref inventory.ObjectRef, change inventory.JobSpecChange) (inventory.JobSpecChange, error) {
	c, err := k.Fleet.client(ref.KubeCluster)
	if err != nil {
		return inventory.JobSpecChange{}, operatorError(err)
	}
	inv, err := c.ChangeJobSpec(ctx, ref, change)
	return inv, operatorError(err)
}

// Redeploy starts ref from savepointPath; see kube.Client.Redeploy.
func (k KubeOperator) Redeploy(ctx context.Context, ref inventory.ObjectRef, savepointPath string, opts core.OperatorWait) (core.OperatorResumeResult, error) {
	c, err := k.Fleet.client(ref.KubeCluster)
	if err != nil {
		return core.OperatorResumeResult{}, operatorError(err)
	}
	res, err := c.Redeploy(ctx, ref, savepointPath, opts)
	return res, operatorError(err)
}

// Discard suspends ref without a savepoint; see kube.Client.Discard.
func (k KubeOperator) Discard(ctx context.Context, ref inventory.ObjectRef, opts core.OperatorWait) (string, error) {
	c, err := k.Fleet.client(ref.KubeCluster)
	if err != nil {
		return "", operatorError(err)
	}
	state, err := c.Discard(ctx, ref, opts)
	return state, operatorError(err)
}

// OperatorStatus reads spec.job and status of ref.
func (k KubeOperator) OperatorStatus(ctx context.Context, ref inventory.ObjectRef) (core.OperatorJobStatus, error) {
	c, err := k.Fleet.client(ref.KubeCluster)
	if err != nil {
		return core.OperatorJobStatus{}, operatorError(err)
	}
	st, err := c.OperatorStatus(ctx, ref)
	if err != nil {
		return core.OperatorJobStatus{}, operatorError(err)
	}
	return st, nil
}

// OperatorRecords lists the snapshot paths the operator's resources
// record in the namespaces (inventory.NamespaceKey), each asked of its
// Kubernetes cluster.
func (k KubeOperator) OperatorRecords(ctx context.Context, namespaces []string) ([]inventory.OperatorRecord, error) {
	byCluster, err := k.Fleet.byCluster(ctx, namespaces)
	if err != nil {
		return nil, operatorError(err)
	}
	var out []inventory.OperatorRecord
	for _, c := range k.Fleet.clients {
		if len(byCluster[c]) == 0 {
			continue
		}
		recs, err := c.OperatorRecords(ctx, byCluster[c])
		if err != nil {
			return nil, operatorError(err)
		}
		out = append(out, recs...)
	}
	return out, nil
}

// ReadSnapshot reads a FlinkStateSnapshot; see kube.Client.ReadSnapshot.
func (k KubeOperator) ReadSnapshot(ctx context.Context, ref inventory.ObjectRef) (inventory.SnapshotResource, []byte, error) {
	c, err := k.Fleet.client(ref.KubeCluster)
	if err != nil {
		return inventory.SnapshotResource{}, nil, err
	}
	s, data, err := c.ReadSnapshot(ctx, ref)
	return s, data, cleanupObjectError(err)
}

// DeleteSnapshot deletes a FlinkStateSnapshot; see kube.Client.DeleteSnapshot.
func (k KubeOperator) DeleteSnapshot(ctx context.Context, ref inventory.ObjectRef, uid, resourceVersion string) error {
	c, err := k.Fleet.client(ref.KubeCluster)
	if err != nil {
		return err
	}
	return cleanupObjectError(c.DeleteSnapshot(ctx, ref, uid, resourceVersion))
}

// SavepointMarks reads the savepoint records of ref; see kube.Client.SavepointMarks.
func (k KubeOperator) SavepointMarks(ctx context.Context, ref inventory.ObjectRef) (core.OperatorSavepointMarks, error) {
	c, err := k.Fleet.client(ref.KubeCluster)
	if err != nil {
		return core.OperatorSavepointMarks{}, operatorError(err)
	}
	m, err := c.SavepointMarks(ctx, ref)
	if err != nil {
		return core.OperatorSavepointMarks{}, operatorError(err)
	}
	return m, nil
}

// operatorError classifies a kube error. An operator that did not react in
// time is final here even though kube counts it retryable: the wait already
// took the whole timeout, and a person should look before a window waits
// that long again.
func operatorError(err error) error {
	if err == nil || errors.Is(err, context.Canceled) {
		return err
	}
	final := func(reason string) error { return &core.OperatorError{Reason: reason, Err: err} }
	switch {
	case errors.Is(err, kube.ErrOperatorTimeout):
		return final(core.ErrTypeOperatorTimeout)
	case errors.Is(err, kube.ErrSavepointMismatch):
		return final(core.ErrTypeOperatorSavepointMismatch)
	case errors.Is(err, kube.ErrInvalidInput), errors.Is(err, kube.ErrInvalid):
		return final(core.ErrTypeInvalidInput)
	case errors.Is(err, kube.ErrPrecondition):
		return final(core.ErrTypeOperatorPrecondition)
	case errors.Is(err, kube.ErrJobFailed):
		return final(core.ErrTypeOperatorJobFailed)
	case errors.Is(err, kube.ErrLastStateFallback):
		return final(core.ErrTypeOperatorLastStateFallback)
	case errors.Is(err, kube.ErrNotFound):
		return final(core.ErrTypeOperatorNotFound)
	case errors.Is(err, kube.ErrForbidden):
		return final(core.ErrTypeOperatorForbidden)
	case kube.IsRetryable(err):
		return &core.OperatorError{Reason: core.ErrTypeOperatorUnavailable, Retryable: true, Err: err}
	}
	return final(core.ErrTypeOperatorFailed)
}
