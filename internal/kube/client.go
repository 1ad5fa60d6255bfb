package kube

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/flinkmaint/flinkmaint/internal/inventory"
)

// Flink Kubernetes Operator resources (flink.apache.org/v1beta1).
var (
	FlinkDeploymentGVR    = schema.GroupVersionResource{Group: "flink.apache.org", Version: "v1beta1", Resource: "flinkdeployments"}
	FlinkSessionJobGVR    = schema.GroupVersionResource{Group: "flink.apache.org", Version: "v1beta1", Resource: "flinksessionjobs"}
	FlinkStateSnapshotGVR = schema.GroupVersionResource{Group: "flink.apache.org", Version: "v1beta1", Resource: "flinkstatesnapshots"}
)

const (
	operatorAPIVersion     = "flink.apache.org/v1beta1"
	KindFlinkDeployment    = inventory.KindFlinkDeployment
	KindFlinkSessionJob    = inventory.KindFlinkSessionJob
	KindFlinkStateSnapshot = inventory.KindFlinkStateSnapshot
)

// Labels of Flink's native Kubernetes integration (flink-kubernetes
// utils.Constants).
const (
	LabelType             = "type"
	LabelTypeNative       = "flink-native-kubernetes"
	LabelApp              = "app"
	LabelComponent        = "component"
	ComponentJobManager   = "jobmanager"
	ComponentTaskManager  = "taskmanager"
	LabelConfigMapType    = "configmap-type"
	ConfigMapTypeHA       = "high-availability"
	flinkConfigMapPrefix  = "flink-config-"
	flinkMainContainer    = "flink-main-container"
	applicationEntrypoint = "kubernetes-application"
)

// JobsAnnotation on a native JobManager Deployment holds the restartable
// jobs of the cluster as a JSON list of inventory.JobSpec, e.g.
//
//	flinkmaint.io/jobs: '[{"name":"orders","restart":{"kind":"rest-jar-run",
//	  "jar":"hdfs:///jars/orders.jar","entryClass":"com.example.Orders",
//	  "programArgs":["--topic","orders"],"parallelism":4}}]'
//
// Native clusters carry no other record of how their jobs were submitted.
const JobsAnnotation = "flinkmaint.io/jobs"

// Client is the Kubernetes adapter: inventory, Operator control and
// orphan detection over the typed and dynamic clients.
type Client struct {
	kube kubernetes.Interface
	dyn  dynamic.Interface
	cfg  Config
	now  func() time.Time
	// beforeUpdate runs between the read and the write of an update; tests
	// use it to race a concurrent writer deterministically.
	beforeUpdate func(ctx context.Context, attempt int)
}

// New validates cfg and returns a Client. The clients are interfaces so
// tests can pass fakes that inject errors.
func New(kube kubernetes.Interface, dyn dynamic.Interface, cfg Config) (*Client, error) {
	if kube == nil {
		return nil, &ConfigError{Field: "kubernetes client", Value: "nil", Valid: "a kubernetes.Interface"}
	}
	if dyn == nil && !cfg.DisableOperator {
		return nil, &ConfigError{Field: "dynamic client", Value: "nil", Valid: "a dynamic.Interface (or disableOperator: true)"}
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("kube: %w", err)
	}
	return &Client{kube: kube, dyn: dyn, cfg: cfg, now: time.Now}, nil
}

// Name is the Kubernetes cluster name the client labels what it finds
// with (Config.Name); empty for the single unnamed cluster.
func (c *Client) Name() string { return c.cfg.Name }

// ReadOnly tells whether the worker's RBAC profile in this cluster grants
// no delete verb (rbacProfile windows).
func (c *Client) ReadOnly() bool { return c.cfg.ReadOnly() }

// Namespace keys of the client's namespaces in scope
// (inventory.NamespaceKey).
func (c *Client) NamespaceKeys(ctx context.Context) ([]string, error) {
	ns, err := c.Namespaces(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = inventory.NamespaceKey(c.cfg.Name, n)
	}
	return out, nil
}
