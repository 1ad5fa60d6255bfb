// Package kube is the Kubernetes adapter: inventory of Flink clusters,
// control of Flink Kubernetes Operator resources, and orphan detection,
// over kubernetes.Interface and dynamic.Interface.
//
// Inventory (Client.Discover) covers the namespaces of Config (a list or a
// label selector), one tenant per namespace:
//   - native Flink clusters: JobManager Deployments labelled
//     type=flink-native-kubernetes, component=jobmanager, app=<cluster-id>;
//     storage dirs from ConfigMap flink-config-<cluster-id> (config.yaml or
//     flink-conf.yaml); restartable jobs from the JobsAnnotation
//     (flinkmaint.io/jobs) on the Deployment, a JSON list of
//     inventory.JobSpec;
//   - Operator FlinkDeployments (dirs from spec.flinkConfiguration) with
//     their FlinkSessionJobs as jobs, restarted by operator-resume;
//   - the static inventory file, if configured.
//
// REST endpoints are http://<cluster-id>-rest.<namespace>:<rest.port>
// unless Config.RESTOverrides names another.
//
// Operator control (Suspend, Resume) writes spec.job with the
// resourceVersion it read, retrying conflicts, then polls status until the
// operator reacts or WaitOptions.Timeout passes (ErrOperatorTimeout naming
// the object). See the Source* constants for where the suspend savepoint
// is read from and why.
//
// Orphans (FindOrphans) are reported, never deleted; DeleteOrphan deletes
// one reported object with UID/resourceVersion preconditions.
//
// Errors are *Error or *ConfigError; match them with errors.Is against the
// Err* sentinels and classify them with IsRetryable.
//
// Permissions: deploy/kustomize/rbac grants exactly the verbs used here.
package kube
