package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	sigsyaml "sigs.k8s.io/yaml"
)

// Labels and names used by Flink's native Kubernetes integration
// (flink-kubernetes: utils.Constants, KubernetesUtils, decorators,
// KubernetesLeaderElectionHaServices). Inventory code selects on these.
const (
	NativeFlinkLabelType            = "type"
	NativeFlinkLabelTypeNative      = "flink-native-kubernetes"
	NativeFlinkLabelApp             = "app"
	NativeFlinkLabelComponent       = "component"
	NativeFlinkComponentJobManager  = "jobmanager"
	NativeFlinkComponentTaskManager = "taskmanager"
	NativeFlinkLabelConfigMapType   = "configmap-type"
	NativeFlinkConfigMapTypeHA      = "high-availability"

	// NativeFlinkMainContainer is the container Flink puts its JVM in.
	NativeFlinkMainContainer = "flink-main-container"
	// NativeFlinkConfigFile is the configuration file of Flink >= 1.19;
	// NativeFlinkLegacyConfigFile the flat one older versions read.
	NativeFlinkConfigFile       = "config.yaml"
	NativeFlinkLegacyConfigFile = "flink-conf.yaml"
	// NativeFlinkLeaderKeyPrefix prefixes the per-component leader entries in the
	// HA cluster ConfigMap; the value is "<session-uuid>,<address>".
	NativeFlinkLeaderKeyPrefix = "org.apache.flink.k8s.leader."
	// NativeFlinkLeaderAnnotation holds the leader-election record on HA ConfigMaps.
	NativeFlinkLeaderAnnotation = "control-plane.alpha.kubernetes.io/leader"

	flinkRestPort     = 8081
	flinkRPCPort      = 6123
	flinkBlobPort     = 6124
	flinkTMRPCPort    = 6122
	flinkMaxClusterID = 45 // Constants.MAXIMUM_CHARACTERS_OF_CLUSTER_ID
	maxTaskManagers   = 500

	crdDigestAnnotation = "sandbox.flinkmaint.io/crd-sha256"
)

// NativeFlinkCommonLabels are the labels Flink puts on every object of a native
// cluster (KubernetesUtils.getCommonLabels).
func NativeFlinkCommonLabels(clusterID string) map[string]string {
	return map[string]string{NativeFlinkLabelType: NativeFlinkLabelTypeNative, NativeFlinkLabelApp: clusterID}
}

// NativeFlinkComponentLabels are the JobManager or TaskManager selectors
// (KubernetesUtils.getJobManagerSelectors / getTaskManagerSelectors).
func NativeFlinkComponentLabels(clusterID, component string) map[string]string {
	l := NativeFlinkCommonLabels(clusterID)
	l[NativeFlinkLabelComponent] = component
	return l
}

// NativeFlinkHAConfigMapLabels label the HA ConfigMaps (KubernetesUtils.getConfigMapLabels).
func NativeFlinkHAConfigMapLabels(clusterID string) map[string]string {
	l := NativeFlinkCommonLabels(clusterID)
	l[NativeFlinkLabelConfigMapType] = NativeFlinkConfigMapTypeHA
	return l
}

// Names of the objects of a native Flink cluster.
func NativeFlinkRestServiceName(clusterID string) string    { return clusterID + "-rest" }
func NativeFlinkConfigMapName(clusterID string) string      { return "flink-config-" + clusterID }
func NativeFlinkHAClusterConfigMap(clusterID string) string { return clusterID + "-cluster-config-map" }
func NativeFlinkHAJobConfigMap(clusterID, jobID string) string {
	return clusterID + "-" + jobID + "-config-map"
}

// NativeFlinkTaskManagerPodName is "<cluster-id>-taskmanager-<attempt>-<index>",
// the name KubernetesResourceManagerDriver gives TaskManager pods.
func NativeFlinkTaskManagerPodName(clusterID string, attempt, index int) string {
	return fmt.Sprintf("%s-taskmanager-%d-%d", clusterID, attempt, index)
}

// NativeFlinkCluster describes a Flink cluster deployed by Flink's native
// Kubernetes integration (`kubernetes-session` / `run-application`).
type NativeFlinkCluster struct {
	Namespace string
	// ClusterID is kubernetes.cluster-id: a DNS-1035 label of at most 45 characters.
	ClusterID string
	// FlinkConfig is written to the flink-config-<id> ConfigMap;
	// kubernetes.cluster-id and kubernetes.namespace are added as Flink does.
	FlinkConfig map[string]string
	// TaskManagers is the number of TaskManager pods (0..500).
	TaskManagers int
	// HA adds the Kubernetes HA ConfigMaps and omits the internal
	// JobManager service, as Flink does with HA on.
	HA bool
	// JobIDs (32 hex characters each) get a job leader entry and a
	// <cluster-id>-<job-id>-config-map when HA is on. Optional.
	JobIDs []string
	// LegacyConfig writes flink-conf.yaml (Flink < 1.19) instead of config.yaml.
	LegacyConfig bool
	// Image defaults to "flink:1.20".
	Image string
}

var (
	flinkJobIDPattern = regexp.MustCompile(`^[0-9a-f]{32}$`)
	// The alphabet Kubernetes uses for generated name suffixes.
	kubeSuffixAlphabet = "bcdfghjklmnpqrstvwxz2456789"
)

// Validate reports the first field that Flink or Kubernetes would reject.
func (c NativeFlinkCluster) Validate() error {
	if errs := validation.IsDNS1123Label(c.Namespace); len(errs) > 0 {
		return &KubeInputError{Field: "Namespace", Value: c.Namespace, Valid: "a DNS-1123 label: " + strings.Join(errs, "; ")}
	}
	if errs := validation.IsDNS1035Label(c.ClusterID); len(errs) > 0 {
		return &KubeInputError{Field: "ClusterID", Value: c.ClusterID, Valid: "a DNS-1035 label (lower case, starts with a letter): " + strings.Join(errs, "; ")}
	}
	if len(c.ClusterID) > flinkMaxClusterID {
		return &KubeInputError{Field: "ClusterID", Value: c.ClusterID, Valid: fmt.Sprintf("at most %d characters (Flink's limit)", flinkMaxClusterID)}
	}
	if c.TaskManagers < 0 || c.TaskManagers > maxTaskManagers {
		return &KubeInputError{Field: "TaskManagers", Value: strconv.Itoa(c.TaskManagers), Valid: fmt.Sprintf("between 0 and %d", maxTaskManagers)}
	}
	for _, id := range c.JobIDs {
		if !flinkJobIDPattern.MatchString(id) {
			return &KubeInputError{Field: "JobIDs", Value: id, Valid: "a Flink JobID: 32 lower-case hex characters"}
		}
	}
	if len(c.JobIDs) > 0 && !c.HA {
		return &KubeInputError{Field: "JobIDs", Value: strings.Join(c.JobIDs, ","), Valid: "only meaningful with HA: true (job ConfigMaps exist only with Kubernetes HA)"}
	}
	for k := range c.FlinkConfig {
		if strings.TrimSpace(k) == "" || strings.ContainsAny(k, ":\n") {
			return &KubeInputError{Field: "FlinkConfig", Value: k, Valid: "keys are non-empty Flink option names without ':' or newlines"}
		}
	}
	return nil
}

// CreateNamespace creates a namespace, or merges labels into an existing one.
func (k *Kube) CreateNamespace(ctx context.Context, name string, labels map[string]string) error {
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return &KubeInputError{Field: "namespace", Value: name, Valid: "a DNS-1123 label: " + strings.Join(errs, "; ")}
	}
	for key, v := range labels {
		if errs := validation.IsQualifiedName(key); len(errs) > 0 {
			return &KubeInputError{Field: "label key", Value: key, Valid: strings.Join(errs, "; ")}
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return &KubeInputError{Field: "label " + key, Value: v, Valid: strings.Join(errs, "; ")}
		}
	}
	cs, err := k.Clientset()
	if err != nil {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	_, err = cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	if err == nil {
		return nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("sandbox: create namespace %s: %w", name, err)
	}
	existing, err := cs.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("sandbox: get namespace %s: %w", name, err)
	}
	if existing.Labels == nil {
		existing.Labels = map[string]string{}
	}
	changed := false
	for key, v := range labels {
		if existing.Labels[key] != v {
			existing.Labels[key] = v
			changed = true
		}
	}
	if !changed {
		return nil
	}
	if _, err := cs.CoreV1().Namespaces().Update(ctx, existing, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("sandbox: label namespace %s: %w", name, err)
	}
	return nil
}

// InstallFlinkCRDs creates or updates the Flink Kubernetes Operator CRDs
// (FlinkOperatorCRDDir) and waits until each is Established.
func (k *Kube) InstallFlinkCRDs(ctx context.Context) error {
	dir, err := FlinkOperatorCRDDir()
	if err != nil {
		return err
	}
	return k.InstallCRDsFrom(ctx, dir)
}

// InstallCRDsFrom installs every CustomResourceDefinition in the *.yml/*.yaml
// files of dir (one document per file) and waits until each is Established.
func (k *Kube) InstallCRDsFrom(ctx context.Context, dir string) error {
	files, err := kubeCRDFiles(dir)
	if err != nil {
		return err
	}
	client, err := apiextensionsclient.NewForConfig(k.Config)
	if err != nil {
		return fmt.Errorf("sandbox: apiextensions client: %w", err)
	}
	crds := client.ApiextensionsV1().CustomResourceDefinitions()
	var names []string
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			return fmt.Errorf("sandbox: read CRD: %w", err)
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := sigsyaml.UnmarshalStrict(data, &crd); err != nil {
			return fmt.Errorf("sandbox: parse CRD %s: %w", file, err)
		}
		if crd.Kind != "CustomResourceDefinition" || crd.Name == "" {
			return fmt.Errorf("sandbox: %s: kind %q name %q: %w", file, crd.Kind, crd.Name,
				&KubeInputError{Field: "CRD file", Value: file, Valid: "a single CustomResourceDefinition document"})
		}
		// The file hash lets a repeat install skip the update, which would
		// make the apiserver rebuild the CRD's handlers (seconds for the
		// 10k-line FlinkDeployment schema).
		sum := sha256.Sum256(data)
		digest := hex.EncodeToString(sum[:])
		if crd.Annotations == nil {
			crd.Annotations = map[string]string{}
		}
		crd.Annotations[crdDigestAnnotation] = digest
		existing, err := crds.Get(ctx, crd.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			if _, err := crds.Create(ctx, &crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("sandbox: create CRD %s: %w", crd.Name, err)
			}
		case err != nil:
			return fmt.Errorf("sandbox: get CRD %s: %w", crd.Name, err)
		case existing.Annotations[crdDigestAnnotation] == digest:
			// Installed from this very file already.
		default:
			crd.ResourceVersion = existing.ResourceVersion
			if _, err := crds.Update(ctx, &crd, metav1.UpdateOptions{}); err != nil {
				return fmt.Errorf("sandbox: update CRD %s: %w", crd.Name, err)
			}
		}
		names = append(names, crd.Name)
	}
	for _, name := range names {
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			crd, err := crds.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return kubeCRDCondition(crd, apiextensionsv1.Established) && kubeCRDCondition(crd, apiextensionsv1.NamesAccepted), nil
		})
		if err != nil {
			return fmt.Errorf("sandbox: CRD %s not Established: %w", name, err)
		}
	}
	return nil
}

func kubeCRDFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("sandbox: CRD directory: %w", err)
	}
	var files []string
	for _, e := range entries {
		ext := filepath.Ext(e.Name())
		if !e.IsDir() && (ext == ".yml" || ext == ".yaml") {
			files = append(files, filepath.Join(dir, e.Name()))
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("sandbox: %w", &KubeInputError{Field: "CRD directory", Value: dir, Valid: "a directory with *.yml or *.yaml CRD files"})
	}
	sort.Strings(files)
	return files, nil
}

func kubeCRDCondition(crd *apiextensionsv1.CustomResourceDefinition, t apiextensionsv1.CustomResourceDefinitionConditionType) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == t {
			return c.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}

// CreateNativeFlinkCluster creates the objects Flink's native Kubernetes
// integration creates, shaped and labelled as Flink does:
//   - JobManager Deployment <id> with a ReplicaSet and one running JobManager
//     pod (the sandbox has no controllers, so they are created here),
//   - rest Service <id>-rest, and the headless internal Service <id> when HA is off,
//   - ConfigMap flink-config-<id> with config.yaml (or flink-conf.yaml),
//   - TaskManager pods <id>-taskmanager-1-<n>, owned by the Deployment,
//   - with HA, <id>-cluster-config-map and <id>-<job-id>-config-map, labelled
//     configmap-type=high-availability and owned by nothing, as in Flink, so
//     they outlive the cluster.
//
// Statuses say Running/ready. Nothing is garbage-collected by owner: the
// sandbox runs no kube-controller-manager. The leader entries are real-shaped;
// the Java-serialised checkpoint and job-graph handles Flink also stores in
// the HA ConfigMaps are not written. An existing object makes it fail.
func (k *Kube) CreateNativeFlinkCluster(ctx context.Context, c NativeFlinkCluster) error {
	if err := c.Validate(); err != nil {
		return err
	}
	cs, err := k.Clientset()
	if err != nil {
		return err
	}
	b := flinkObjects{c: c, image: c.Image}
	if b.image == "" {
		b.image = "flink:1.20"
	}
	confFile, confData, err := b.configFile()
	if err != nil {
		return err
	}

	deploy, err := cs.AppsV1().Deployments(c.Namespace).Create(ctx, b.deployment(confFile), metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("sandbox: create JobManager deployment %s/%s: %w", c.Namespace, c.ClusterID, err)
	}
	owner := metav1.OwnerReference{
		APIVersion: "apps/v1", Kind: "Deployment", Name: deploy.Name, UID: deploy.UID,
		Controller: kubePtr(true), BlockOwnerDeletion: kubePtr(true),
	}

	cm := &corev1.ConfigMap{
		ObjectMeta: b.meta(NativeFlinkConfigMapName(c.ClusterID), NativeFlinkCommonLabels(c.ClusterID), owner),
		Data:       map[string]string{confFile: confData},
	}
	if _, err := cs.CoreV1().ConfigMaps(c.Namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("sandbox: create config map %s: %w", cm.Name, err)
	}
	for _, svc := range b.services(owner) {
		if _, err := cs.CoreV1().Services(c.Namespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("sandbox: create service %s: %w", svc.Name, err)
		}
	}
	if err := b.createJobManagerPod(ctx, cs, deploy, confFile); err != nil {
		return err
	}
	for i := 1; i <= c.TaskManagers; i++ {
		pod := b.taskManagerPod(i, owner, confFile)
		if err := kubeCreateRunningPod(ctx, cs, pod, fmt.Sprintf("10.244.1.%d", i%250+1)); err != nil {
			return err
		}
	}
	if c.HA {
		for _, cm := range b.haConfigMaps() {
			if _, err := cs.CoreV1().ConfigMaps(c.Namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("sandbox: create HA config map %s: %w", cm.Name, err)
			}
		}
	}
	return nil
}

type flinkObjects struct {
	c     NativeFlinkCluster
	image string
}

func (b flinkObjects) meta(name string, labels map[string]string, owners ...metav1.OwnerReference) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: b.c.Namespace, Labels: labels, OwnerReferences: owners}
}

// configFile renders the Flink configuration with the keys Flink itself adds
// when it deploys a native cluster.
func (b flinkObjects) configFile() (name, data string, err error) {
	conf := make(map[string]string, len(b.c.FlinkConfig)+3)
	for k, v := range b.c.FlinkConfig {
		conf[k] = v
	}
	setDefault := func(k, v string) {
		if _, ok := conf[k]; !ok {
			conf[k] = v
		}
	}
	setDefault("kubernetes.cluster-id", b.c.ClusterID)
	setDefault("kubernetes.namespace", b.c.Namespace)
	if b.c.HA {
		_, legacyKey := conf["high-availability"]
		if !legacyKey {
			setDefault("high-availability.type", "kubernetes")
		}
	}
	keys := make([]string, 0, len(conf))
	for k := range conf {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if b.c.LegacyConfig {
		// flink-conf.yaml is read line by line as "key: value".
		var sb strings.Builder
		for _, k := range keys {
			if strings.Contains(conf[k], "\n") {
				return "", "", &KubeInputError{Field: "FlinkConfig[" + k + "]", Value: conf[k], Valid: "a single-line value for flink-conf.yaml"}
			}
			fmt.Fprintf(&sb, "%s: %s\n", k, conf[k])
		}
		return NativeFlinkLegacyConfigFile, sb.String(), nil
	}
	// config.yaml is standard YAML; flattened keys are accepted by Flink.
	node := &yaml.Node{Kind: yaml.MappingNode}
	for _, k := range keys {
		node.Content = append(node.Content,
			&yaml.Node{Kind: yaml.ScalarNode, Value: k},
			&yaml.Node{Kind: yaml.ScalarNode, Value: conf[k]})
	}
	out, err := yaml.Marshal(node)
	if err != nil {
		return "", "", fmt.Errorf("sandbox: render %s: %w", NativeFlinkConfigFile, err)
	}
	return NativeFlinkConfigFile, string(out), nil
}

func (b flinkObjects) podSpec(confFile string, args []string, ports []corev1.ContainerPort, restart corev1.RestartPolicy) corev1.PodSpec {
	return corev1.PodSpec{
		RestartPolicy: restart,
		Containers: []corev1.Container{{
			Name:  NativeFlinkMainContainer,
			Image: b.image,
			Args:  args,
			Ports: ports,
			VolumeMounts: []corev1.VolumeMount{{
				Name: "flink-config-volume", MountPath: "/opt/flink/conf",
			}},
		}},
		Volumes: []corev1.Volume{{
			Name: "flink-config-volume",
			VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: NativeFlinkConfigMapName(b.c.ClusterID)},
				Items:                []corev1.KeyToPath{{Key: confFile, Path: confFile}},
			}},
		}},
	}
}

func (b flinkObjects) jobManagerPorts() []corev1.ContainerPort {
	return []corev1.ContainerPort{
		{Name: "rest", ContainerPort: flinkRestPort},
		{Name: "jobmanager-rpc", ContainerPort: flinkRPCPort},
		{Name: "blobserver", ContainerPort: flinkBlobPort},
	}
}

func (b flinkObjects) deployment(confFile string) *appsv1.Deployment {
	id := b.c.ClusterID
	jm := NativeFlinkComponentLabels(id, NativeFlinkComponentJobManager)
	return &appsv1.Deployment{
		ObjectMeta: b.meta(id, jm),
		Spec: appsv1.DeploymentSpec{
			Replicas: kubePtr(int32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: jm},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: jm},
				Spec: b.podSpec(confFile, []string{"kubernetes-jobmanager.sh", "kubernetes-session"},
					b.jobManagerPorts(), corev1.RestartPolicyAlways),
			},
		},
	}
}

func (b flinkObjects) services(owner metav1.OwnerReference) []*corev1.Service {
	id := b.c.ClusterID
	jm := NativeFlinkComponentLabels(id, NativeFlinkComponentJobManager)
	rest := &corev1.Service{
		ObjectMeta: b.meta(NativeFlinkRestServiceName(id), NativeFlinkCommonLabels(id), owner),
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: jm,
			Ports: []corev1.ServicePort{{
				Name: "rest", Port: flinkRestPort, TargetPort: intstr.FromInt32(flinkRestPort),
			}},
		},
	}
	if b.c.HA {
		// With HA the TaskManagers find the JobManager through the HA
		// ConfigMaps, so Flink creates no internal service.
		return []*corev1.Service{rest}
	}
	internal := &corev1.Service{
		ObjectMeta: b.meta(id, NativeFlinkCommonLabels(id), owner),
		Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone,
			Selector:  jm,
			Ports: []corev1.ServicePort{
				{Name: "jobmanager-rpc", Port: flinkRPCPort, TargetPort: intstr.FromInt32(flinkRPCPort)},
				{Name: "blobserver", Port: flinkBlobPort, TargetPort: intstr.FromInt32(flinkBlobPort)},
			},
		},
	}
	return []*corev1.Service{rest, internal}
}

// createJobManagerPod does what the deployment and replica-set controllers
// would: a ReplicaSet <id>-<hash> and a pod <id>-<hash>-<suffix>, then
// marks the Deployment available.
func (b flinkObjects) createJobManagerPod(ctx context.Context, cs kubernetes.Interface, deploy *appsv1.Deployment, confFile string) error {
	id := b.c.ClusterID
	hash := kubeNameSuffix(b.c.Namespace+"/"+id, 10)
	labels := NativeFlinkComponentLabels(id, NativeFlinkComponentJobManager)
	labels["pod-template-hash"] = hash
	rsOwner := metav1.OwnerReference{
		APIVersion: "apps/v1", Kind: "Deployment", Name: deploy.Name, UID: deploy.UID,
		Controller: kubePtr(true), BlockOwnerDeletion: kubePtr(true),
	}
	rs := &appsv1.ReplicaSet{
		ObjectMeta: b.meta(id+"-"+hash, labels, rsOwner),
		Spec: appsv1.ReplicaSetSpec{
			Replicas: kubePtr(int32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       deploy.Spec.Template.Spec,
			},
		},
	}
	rs, err := cs.AppsV1().ReplicaSets(b.c.Namespace).Create(ctx, rs, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("sandbox: create replica set for %s: %w", id, err)
	}
	podOwner := metav1.OwnerReference{
		APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID,
		Controller: kubePtr(true), BlockOwnerDeletion: kubePtr(true),
	}
	pod := &corev1.Pod{
		ObjectMeta: b.meta(rs.Name+"-"+kubeNameSuffix(rs.Name, 5), labels, podOwner),
		Spec:       *rs.Spec.Template.Spec.DeepCopy(),
	}
	if err := kubeCreateRunningPod(ctx, cs, pod, "10.244.0.10"); err != nil {
		return err
	}

	rs.Status = appsv1.ReplicaSetStatus{Replicas: 1, FullyLabeledReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1, ObservedGeneration: rs.Generation}
	if _, err := cs.AppsV1().ReplicaSets(b.c.Namespace).UpdateStatus(ctx, rs, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("sandbox: status of replica set %s: %w", rs.Name, err)
	}
	now := metav1.Now()
	deploy.Status = appsv1.DeploymentStatus{
		ObservedGeneration: deploy.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1,
		Conditions: []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable", LastUpdateTime: now, LastTransitionTime: now},
			{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable", LastUpdateTime: now, LastTransitionTime: now},
		},
	}
	if _, err := cs.AppsV1().Deployments(b.c.Namespace).UpdateStatus(ctx, deploy, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("sandbox: status of deployment %s: %w", deploy.Name, err)
	}
	return nil
}

func (b flinkObjects) taskManagerPod(index int, owner metav1.OwnerReference, confFile string) *corev1.Pod {
	id := b.c.ClusterID
	name := NativeFlinkTaskManagerPodName(id, 1, index)
	spec := b.podSpec(confFile,
		[]string{"kubernetes-taskmanager.sh", "-Dtaskmanager.resource-id=" + name},
		[]corev1.ContainerPort{{Name: "taskmanager-rpc", ContainerPort: flinkTMRPCPort}},
		corev1.RestartPolicyNever)
	return &corev1.Pod{
		ObjectMeta: b.meta(name, NativeFlinkComponentLabels(id, NativeFlinkComponentTaskManager), owner),
		Spec:       spec,
	}
}

func (b flinkObjects) haConfigMaps() []*corev1.ConfigMap {
	id, ns := b.c.ClusterID, b.c.Namespace
	holder := kubeStableUUID(ns + "/" + id + "/holder")
	now := time.Now().UTC().Format(time.RFC3339)
	record, _ := json.Marshal(map[string]any{
		"holderIdentity": holder, "leaseDurationSeconds": 15,
		"acquireTime": now, "renewTime": now, "leaderTransitions": 0,
	})
	annotations := map[string]string{NativeFlinkLeaderAnnotation: string(record)}
	jmAddr := fmt.Sprintf("pekko.tcp://flink@10.244.0.10:%d/user/rpc/", flinkRPCPort)
	data := map[string]string{
		NativeFlinkLeaderKeyPrefix + "dispatcher":      kubeStableUUID(id+"/dispatcher") + "," + jmAddr + "dispatcher_1",
		NativeFlinkLeaderKeyPrefix + "resourcemanager": kubeStableUUID(id+"/rm") + "," + jmAddr + "resourcemanager_0",
		NativeFlinkLeaderKeyPrefix + "restserver":      kubeStableUUID(id+"/rest") + "," + fmt.Sprintf("http://10.244.0.10:%d", flinkRestPort),
	}
	cms := []*corev1.ConfigMap{}
	for _, jobID := range b.c.JobIDs {
		data[NativeFlinkLeaderKeyPrefix+"job-"+jobID] = kubeStableUUID(id+"/"+jobID) + "," + jmAddr + "jobmanager_" + jobID
		meta := b.meta(NativeFlinkHAJobConfigMap(id, jobID), NativeFlinkHAConfigMapLabels(id))
		meta.Annotations = annotations
		cms = append(cms, &corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"counter": "1"}})
	}
	meta := b.meta(NativeFlinkHAClusterConfigMap(id), NativeFlinkHAConfigMapLabels(id))
	meta.Annotations = annotations
	return append([]*corev1.ConfigMap{{ObjectMeta: meta, Data: data}}, cms...)
}

// kubeCreateRunningPod creates a pod and writes the status a kubelet would.
func kubeCreateRunningPod(ctx context.Context, cs kubernetes.Interface, pod *corev1.Pod, ip string) error {
	created, err := cs.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("sandbox: create pod %s: %w", pod.Name, err)
	}
	now := metav1.Now()
	created.Status = corev1.PodStatus{
		Phase:     corev1.PodRunning,
		PodIP:     ip,
		PodIPs:    []corev1.PodIP{{IP: ip}},
		StartTime: &now,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
		},
		ContainerStatuses: []corev1.ContainerStatus{{
			Name: NativeFlinkMainContainer, Image: pod.Spec.Containers[0].Image, Ready: true, Started: kubePtr(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
		}},
	}
	if _, err := cs.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("sandbox: status of pod %s: %w", pod.Name, err)
	}
	return nil
}

// kubeNameSuffix derives a stable name suffix from seed in the alphabet
// Kubernetes uses for generated names, so reruns produce the same names.
func kubeNameSuffix(seed string, n int) string {
	h := fnv.New64a()
	_, _ = h.Write([]byte(seed))
	v := h.Sum64()
	out := make([]byte, n)
	for i := range out {
		out[i] = kubeSuffixAlphabet[v%uint64(len(kubeSuffixAlphabet))]
		v /= uint64(len(kubeSuffixAlphabet))
		if v == 0 {
			v = h.Sum64() + uint64(i)*0x9e3779b97f4a7c15
		}
	}
	return string(out)
}

// kubeStableUUID is a stable, well-formed v4-shaped UUID derived from seed.
func kubeStableUUID(seed string) string {
	h1, h2 := fnv.New64a(), fnv.New64()
	_, _ = h1.Write([]byte(seed))
	_, _ = h2.Write([]byte(seed))
	a, b := h1.Sum64(), h2.Sum64()
	return fmt.Sprintf("%08x-%04x-4%03x-%04x-%012x",
		uint32(a>>32), uint16(a>>16), uint16(a)&0x0fff, (uint16(b>>48)&0x3fff)|0x8000, b&0xffffffffffff)
}

func kubePtr[T any](v T) *T { return &v }

var (
	flinkCRDsOnce sync.Once
	flinkCRDsErr  error
)

// RequireFlinkKube is RequireKube with the Flink Kubernetes Operator CRDs
// installed (once per test binary) and clients for the core and dynamic
// APIs. The CRDs come from ../shared (see RequireShared).
func RequireFlinkKube(t testing.TB) (*Kube, kubernetes.Interface, dynamic.Interface) {
	t.Helper()
	RequireShared(t)
	k := RequireKube(t)
	flinkCRDsOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		flinkCRDsErr = k.InstallFlinkCRDs(ctx)
	})
	if flinkCRDsErr != nil {
		t.Fatalf("install Flink operator CRDs: %v", flinkCRDsErr)
	}
	cs, err := k.Clientset()
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := k.Dynamic()
	if err != nil {
		t.Fatal(err)
	}
	return k, cs, dyn
}

var (
	newerOperatorOnce sync.Once
	newerOperatorErr  error
)

// RequireNewerOperatorKube is RequireFlinkKube on the second control plane
// (see RequireSecondKube) with the CRDs of fko-next/: an operator release
// newer than the fixtures, whose resources carry fields the 1.15.0 CRDs
// prune (FlinkStateSnapshotReference in spec.job and status.jobStatus).
func RequireNewerOperatorKube(t testing.TB) (*Kube, kubernetes.Interface, dynamic.Interface) {
	t.Helper()
	k := RequireSecondKube(t)
	newerOperatorOnce.Do(func() {
		root, err := RepoRoot()
		if err != nil {
			newerOperatorErr = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		newerOperatorErr = k.InstallCRDsFrom(ctx, filepath.Join(root, "internal", "testsupport", "sandbox", "fko-next"))
	})
	if newerOperatorErr != nil {
		t.Fatalf("install the newer operator's CRDs: %v", newerOperatorErr)
	}
	cs, err := k.Clientset()
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := k.Dynamic()
	if err != nil {
		t.Fatal(err)
	}
	return k, cs, dyn
}
