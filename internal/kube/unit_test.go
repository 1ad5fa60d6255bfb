package kube

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
)

// Fake clientsets here only inject API errors the real apiserver will not
// produce on demand (5xx, throttling, endless conflicts).

var fdGR = schema.GroupResource{Group: "flink.apache.org", Resource: "flinkdeployments"}

func fakeClient(t *testing.T, objs ...runtime.Object) (*Client, *fake.Clientset, *dynamicfake.FakeDynamicClient) {
	t.Helper()
	cs := fake.NewClientset()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		FlinkDeploymentGVR:    "FlinkDeploymentList",
		FlinkSessionJobGVR:    "FlinkSessionJobList",
		FlinkStateSnapshotGVR: "FlinkStateSnapshotList",
	}, objs...)
	c, err := New(cs, dyn, Config{Namespaces: []string{"team-a"}, TenantRootTemplate: "/t/{namespace}"})
	if err != nil {
		t.Fatal(err)
	}
	return c, cs, dyn
}

func fakeFD(state string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": operatorAPIVersion, "kind": KindFlinkDeployment,
		"metadata": map[string]any{"name": "orders", "namespace": "team-a", "resourceVersion": "1"},
		"spec":     map[string]any{"job": map[string]any{"state": state, "upgradeMode": "savepoint"}},
	}}
}

func TestUpdateRetriesConflicts(t *testing.T) {
	c, _, dyn := fakeClient(t, fakeFD("running"))
	calls := 0
	dyn.PrependReactor("update", "flinkdeployments", func(k8stesting.Action) (bool, runtime.Object, error) {
		calls++
		if calls <= 2 {
			return true, nil, apierrors.NewConflict(fdGR, "orders", errors.New("the object has been modified"))
		}
		return false, nil, nil
	})
	r := ref(KindFlinkDeployment, "team-a", "orders")
	retries, err := c.updateJob(context.Background(), FlinkDeploymentGVR, r, func(_ *unstructured.Unstructured, job map[string]any) (bool, error) {
		job["state"] = SpecStateSuspended
		return true, nil
	})
	if err != nil || retries != 2 || calls != 3 {
		t.Fatalf("retries %d, update calls %d, err %v; want 2, 3, nil", retries, calls, err)
	}
	st, err := c.OperatorStatus(context.Background(), r)
	if err != nil || st.SpecState != SpecStateSuspended {
		t.Fatalf("after retried update: %+v, %v", st, err)
	}
}

func TestUpdateGivesUpOnEndlessConflicts(t *testing.T) {
	c, _, dyn := fakeClient(t, fakeFD("running"))
	dyn.PrependReactor("update", "flinkdeployments", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewConflict(fdGR, "orders", errors.New("the object has been modified"))
	})
	_, err := c.Suspend(context.Background(), ref(KindFlinkDeployment, "team-a", "orders"), WaitOptions{Timeout: time.Second})
	if !errors.Is(err, ErrConflict) || !IsRetryable(err) || !strings.Contains(err.Error(), "FlinkDeployment team-a/orders") || !strings.Contains(err.Error(), "5 conflicts") {
		t.Fatalf("want retryable ErrConflict naming the object after 5 conflicts, got %v", err)
	}
}

func TestServerErrorsAreRetryable(t *testing.T) {
	c, _, dyn := fakeClient(t, fakeFD("running"))
	dyn.PrependReactor("update", "flinkdeployments", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewInternalError(errors.New("etcdserver: leader changed"))
	})
	_, err := c.Suspend(context.Background(), ref(KindFlinkDeployment, "team-a", "orders"), WaitOptions{Timeout: time.Second})
	if !errors.Is(err, ErrUnavailable) || !IsRetryable(err) || !strings.Contains(err.Error(), "update FlinkDeployment team-a/orders") {
		t.Fatalf("want retryable ErrUnavailable naming the object, got %v", err)
	}
}

func TestDiscoverListErrors(t *testing.T) {
	cases := map[string]struct {
		err       error
		sentinel  error
		retryable bool
	}{
		"503":       {apierrors.NewServiceUnavailable("apiserver shutting down"), ErrUnavailable, true},
		"429":       {apierrors.NewTooManyRequests("slow down", 1), ErrUnavailable, true},
		"timeout":   {apierrors.NewServerTimeout(schema.GroupResource{Resource: "deployments"}, "list", 1), ErrUnavailable, true},
		"forbidden": {apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "deployments"}, "", errors.New("no")), ErrForbidden, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, cs, _ := fakeClient(t)
			cs.PrependReactor("list", "deployments", func(k8stesting.Action) (bool, runtime.Object, error) {
				return true, nil, tc.err
			})
			_, err := c.Discover(context.Background())
			if !errors.Is(err, tc.sentinel) || IsRetryable(err) != tc.retryable || !strings.Contains(err.Error(), "in team-a") {
				t.Fatalf("got %v (retryable %v), want %v retryable %v naming team-a", err, IsRetryable(err), tc.sentinel, tc.retryable)
			}
		})
	}
}

func TestDeleteOrphanServerPrecondition(t *testing.T) {
	c, cs, _ := fakeClient(t)
	cm := map[string]string{LabelType: LabelTypeNative, LabelApp: "gone", LabelConfigMapType: ConfigMapTypeHA}
	created, err := cs.CoreV1().ConfigMaps("team-a").Create(context.Background(), newConfigMap("gone-cluster-config-map", "uid-1", cm), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The object changes between our read and the delete: the apiserver
	// rejects the preconditions with 409.
	cs.PrependReactor("delete", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, "gone-cluster-config-map",
			errors.New("Precondition failed: UID in precondition: uid-1, UID in object meta: uid-2"))
	})
	err = c.DeleteOrphan(context.Background(), refOf("v1", "ConfigMap", "gone-cluster-config-map"), string(created.UID), "")
	if !errors.Is(err, ErrPrecondition) || errors.Is(err, ErrConflict) || IsRetryable(err) {
		t.Fatalf("want non-retryable ErrPrecondition, got %v", err)
	}
}

func TestIsRetryable(t *testing.T) {
	gr := schema.GroupResource{Resource: "pods"}
	cases := map[string]struct {
		err  error
		want bool
	}{
		"nil":               {nil, false},
		"conflict":          {apierrors.NewConflict(gr, "p", errors.New("x")), true},
		"internal":          {apierrors.NewInternalError(errors.New("x")), true},
		"unavailable":       {apierrors.NewServiceUnavailable("x"), true},
		"too many requests": {apierrors.NewTooManyRequests("x", 1), true},
		"gateway timeout":   {apierrors.NewTimeoutError("x", 1), true},
		"502":               {apierrors.NewGenericServerResponse(502, "get", gr, "p", "bad gateway", 0, true), true},
		"network":           {&net.OpError{Op: "dial", Err: errors.New("connection refused")}, true},
		"deadline":          {fmt.Errorf("wait: %w", context.DeadlineExceeded), true},
		"operator timeout":  {kindError("wait for", "FlinkDeployment a/b", ErrOperatorTimeout, "x"), true},
		"not found":         {apierrors.NewNotFound(gr, "p"), false},
		"forbidden":         {apierrors.NewForbidden(gr, "p", errors.New("x")), false},
		"unauthorized":      {apierrors.NewUnauthorized("x"), false},
		"invalid":           {apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "p", nil), false},
		"bad request":       {apierrors.NewBadRequest("x"), false},
		"canceled":          {fmt.Errorf("x: %w", context.Canceled), false},
		"precondition":      {kindError("delete", "Pod a/b", ErrPrecondition, "x"), false},
		"savepoint":         {kindError("resume", "FlinkDeployment a/b", ErrSavepointMismatch, "x"), false},
		"bad input":         {&ConfigError{Field: "f", Value: "v", Valid: "w"}, false},
	}
	for name, tc := range cases {
		if got := IsRetryable(newErrorOr(tc.err)); got != tc.want {
			t.Errorf("%s: IsRetryable(%v) = %v, want %v", name, tc.err, got, tc.want)
		}
	}
}

func newErrorOr(err error) error {
	if err == nil {
		return nil
	}
	return newError("get", "Pod a/b", err)
}

func TestConfigValidate(t *testing.T) {
	cases := map[string]struct {
		cfg   Config
		field string
	}{
		"nothing selected":     {Config{}, "namespaces"},
		"list and selector":    {Config{Namespaces: []string{"a"}, NamespaceSelector: "x=y", TenantRootTemplate: "/t/{namespace}"}, "namespaceSelector"},
		"bad namespace":        {Config{Namespaces: []string{"Team_A"}, TenantRootTemplate: "/t/{namespace}"}, "namespaces[0]"},
		"duplicate namespace":  {Config{Namespaces: []string{"a", "a"}, TenantRootTemplate: "/t/{namespace}"}, "namespaces[1]"},
		"bad selector":         {Config{NamespaceSelector: "x in (", TenantRootTemplate: "/t/{namespace}"}, "namespaceSelector"},
		"no root for ns":       {Config{Namespaces: []string{"a"}}, "namespaces[0]"},
		"template lacks {ns}":  {Config{Namespaces: []string{"a"}, TenantRootTemplate: "/t/all"}, "tenantRootTemplate"},
		"relative root":        {Config{Namespaces: []string{"a"}, Tenants: []TenantMapping{{Namespace: "a", Root: "user/a"}}}, "tenants[0].root"},
		"duplicate tenant":     {Config{Namespaces: []string{"a", "b"}, Tenants: []TenantMapping{{Namespace: "a", Name: "t", Root: "/a"}, {Namespace: "b", Name: "t", Root: "/b"}}}, "tenants[1].name"},
		"bad override key":     {Config{Namespaces: []string{"a"}, TenantRootTemplate: "/t/{namespace}", RESTOverrides: map[string]string{"a": "http://x:1"}}, "restOverrides"},
		"bad override url":     {Config{Namespaces: []string{"a"}, TenantRootTemplate: "/t/{namespace}", RESTOverrides: map[string]string{"a/c": "x:1"}}, "restOverrides[a/c]"},
		"selector needs roots": {Config{NamespaceSelector: "x=y"}, "tenantRootTemplate"},
		"bad security key":     {Config{Namespaces: []string{"a"}, TenantRootTemplate: "/t/{namespace}", RESTSecurity: map[string]inventory.RESTSecurity{"a": {}}}, "restSecurity"},
		"relative CA file": {Config{Namespaces: []string{"a"}, TenantRootTemplate: "/t/{namespace}",
			RESTSecurity: map[string]inventory.RESTSecurity{"a/c": {TLS: inventory.RESTTLS{CAFile: "ca.crt"}}}}, "restSecurity[a/c].tls.caFile"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := tc.cfg.Validate()
			var ce *ConfigError
			if !errors.As(err, &ce) || !errors.Is(err, ErrInvalidInput) {
				t.Fatalf("want ConfigError, got %v", err)
			}
			if ce.Field != tc.field || ce.Valid == "" {
				t.Fatalf("field %q (valid %q), want %q: %v", ce.Field, ce.Valid, tc.field, err)
			}
		})
	}
	ok := Config{NamespaceSelector: "flinkmaint.io/managed=true", TenantRootTemplate: "hdfs://nn:8020/user/app/{namespace}",
		RESTOverrides: map[string]string{"team-a/orders": "http://127.0.0.1:8081"}}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid config rejected: %v", err)
	}
}

func TestParseFlinkConfigMap(t *testing.T) {
	nested, err := parseFlinkConfigMap(map[string]string{flinkConfigFile: `
execution:
  checkpointing:
    dir: hdfs://nn/chk
    savepoint-dir: hdfs://nn/sp
high-availability.storageDir: hdfs://nn/ha
rest:
  port: 9081
`})
	if err != nil {
		t.Fatal(err)
	}
	if nested.first(checkpointDirKeys) != "hdfs://nn/chk" || nested.first(savepointDirKeys) != "hdfs://nn/sp" || nested.first(haStorageDirKeys) != "hdfs://nn/ha" {
		t.Fatalf("nested: %v", nested)
	}
	if p, err := nested.restPort(); err != nil || p != 9081 {
		t.Fatalf("rest.port: %d, %v", p, err)
	}
	legacy, err := parseFlinkConfigMap(map[string]string{flinkLegacyConfigFile: "# comment\nstate.checkpoints.dir: hdfs://nn/old # trailing\nbroken line\nrest.port: x\n"})
	if err != nil {
		t.Fatal(err)
	}
	if legacy.first(checkpointDirKeys) != "hdfs://nn/old" {
		t.Fatalf("legacy: %v", legacy)
	}
	if _, err := legacy.restPort(); err == nil || !strings.Contains(err.Error(), "rest.port") {
		t.Fatalf("bad rest.port accepted: %v", err)
	}
	if _, err := parseFlinkConfigMap(map[string]string{"log4j.properties": ""}); err == nil || !strings.Contains(err.Error(), "log4j.properties") {
		t.Fatalf("missing config file: %v", err)
	}
	if _, err := parseFlinkConfigMap(map[string]string{flinkConfigFile: "- a\n- b\n"}); err == nil {
		t.Fatal("a YAML list accepted as Flink configuration")
	}
}

func newConfigMap(name, uid string, labels map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team-a", UID: types.UID(uid), Labels: labels}}
}

func refOf(apiVersion, kind, name string) inventory.ObjectRef {
	return inventory.ObjectRef{APIVersion: apiVersion, Kind: kind, Namespace: "team-a", Name: name}
}

// The worker wires Client in as the activities' inventory port.
var _ core.InventorySource = (*Client)(nil)

// A ForSt job is suspended only when the operator takes a NATIVE
// savepoint; the nested and flattened spellings of the keys read alike.
func TestForStSavepointFormat(t *testing.T) {
	res := func(conf map[string]any) *unstructured.Unstructured {
		spec := map[string]any{}
		if conf != nil {
			spec["flinkConfiguration"] = conf
		}
		return &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	}
	for name, tc := range map[string]struct {
		conf   map[string]any
		refuse bool
	}{
		"no configuration":   {nil, false},
		"rocksdb":            {map[string]any{"state.backend.type": "rocksdb"}, false},
		"forst, default":     {map[string]any{"state.backend.type": "forst"}, true},
		"forst, canonical":   {map[string]any{"state.backend.type": "ForSt", operatorSavepointFormatKey: "CANONICAL"}, true},
		"forst, native":      {map[string]any{"state.backend.type": "forst", operatorSavepointFormatKey: "native"}, false},
		"legacy key forst":   {map[string]any{"state.backend": "forst"}, true},
		"nested forst":       {map[string]any{"state": map[string]any{"backend": map[string]any{"type": "forst"}}}, true},
		"nested, native set": {map[string]any{"state": map[string]any{"backend": map[string]any{"type": "forst"}}, "kubernetes": map[string]any{"operator": map[string]any{"savepoint": map[string]any{"format": map[string]any{"type": "NATIVE"}}}}}, false},
	} {
		err := forStSavepointFormat(res(tc.conf))
		if (err != nil) != tc.refuse {
			t.Errorf("%s: %v; want refused %v", name, err, tc.refuse)
		}
		if err != nil && !strings.Contains(err.Error(), operatorSavepointFormatKey+": NATIVE") {
			t.Errorf("%s: %v does not say what to set", name, err)
		}
	}
}

// A FlinkDeployment's security.ssl.rest.enabled picks the scheme of its
// REST URL, and its restSecurity entry travels with the cluster.
func TestDiscoverRESTSchemeAndSecurity(t *testing.T) {
	fd := func(name string, conf map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": operatorAPIVersion, "kind": KindFlinkDeployment,
			"metadata": map[string]any{"name": name, "namespace": "team-a", "resourceVersion": "1"},
			"spec":     map[string]any{"flinkConfiguration": conf},
		}}
	}
	discover := func(t *testing.T, objs ...runtime.Object) (inventory.Inventory, error) {
		cs := fake.NewClientset()
		dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
			FlinkDeploymentGVR: "FlinkDeploymentList", FlinkSessionJobGVR: "FlinkSessionJobList", FlinkStateSnapshotGVR: "FlinkStateSnapshotList",
		}, objs...)
		sec := inventory.RESTSecurity{TLS: inventory.RESTTLS{CAFile: "/etc/payments/ca.crt"}}
		c, err := New(cs, dyn, Config{Namespaces: []string{"team-a"}, TenantRootTemplate: "/t/{namespace}",
			RESTSecurity: map[string]inventory.RESTSecurity{"team-a/payments": sec}})
		if err != nil {
			t.Fatal(err)
		}
		return c.Discover(context.Background())
	}
	inv, err := discover(t,
		fd("payments", map[string]any{"security.ssl.rest.enabled": "true", "rest.port": "8443"}),
		fd("orders", map[string]any{"security": map[string]any{"ssl": map[string]any{"rest": map[string]any{"enabled": false}}}}),
		fd("plain", map[string]any{}))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]inventory.Cluster{}
	for _, c := range inv.Clusters {
		got[c.ClusterID] = c
	}
	if p := got["payments"]; p.RESTURL != "https://payments-rest.team-a:8443" || p.REST == nil || p.REST.TLS.CAFile != "/etc/payments/ca.crt" {
		t.Fatalf("payments: %s with %+v, want https://payments-rest.team-a:8443 with its CA file", p.RESTURL, p.REST)
	}
	for _, id := range []string{"orders", "plain"} {
		if c := got[id]; c.RESTURL != "http://"+id+"-rest.team-a:8081" || c.REST != nil {
			t.Fatalf("%s: %s with %+v, want plain http and no own settings", id, c.RESTURL, c.REST)
		}
	}
	_, err = discover(t, fd("payments", map[string]any{"security.ssl.rest.enabled": "yes"}))
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "FlinkDeployment team-a/payments") || !strings.Contains(err.Error(), `security.ssl.rest.enabled "yes": want true or false`) {
		t.Fatalf("a bad security.ssl.rest.enabled: want ErrInvalid naming the object and key, got %v", err)
	}
}
