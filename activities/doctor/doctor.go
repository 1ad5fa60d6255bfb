package doctor

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/flinkmaint/flinkmaint/internal/storage"
)

// WorkerInfo is what doctor reports about the worker and checks it may do.
type WorkerInfo struct {
	// Version is the worker's build version.
	Version string
	// WritableRoots are storage.writableRoots: doctor proves each exists
	// and takes a write.
	WritableRoots []string
	// KerberosPrincipal is who the worker authenticates to HDFS as; empty
	// without Kerberos.
	KerberosPrincipal string
}

// Outcomes of a doctor check.
const (
	CheckOK   = "ok"
	CheckWarn = "warn"
	CheckFail = "fail"
)

// DoctorCheck is one finding of `flinkmaint doctor`: what was checked, how
// it went, what was seen, and what to do about it.
type DoctorCheck struct {
	Check  string `json:"check"`
	Result string `json:"result"`
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

// DoctorInput is the input of Doctor.
type DoctorInput struct{}

// DoctorResult is what the worker that ran Doctor found from where it
// runs.
type DoctorResult struct {
	Worker   string
	Hostname string
	Version  string
	Checks   []DoctorCheck
}

// doctorCallTimeout bounds each probe, so one dead endpoint does not use
// up the whole check.
const doctorCallTimeout = 15 * time.Second

// doctorProbeName prefixes the probe files Doctor writes and removes
// again.
const doctorProbeName = ".flinkmaint-doctor-"

// Doctor checks, from this worker, what runs need beyond Temporal: the
// storage roots (readable, writable where the worker writes; a probe
// file is written and removed again), Kerberos, the Kubernetes API and
// the worker's RBAC in every tenant namespace, the Flink clusters of the
// inventory and the drill cluster, and the notification sinks. It never
// fails: every problem is a finding.
func (a *Activities) Doctor(ctx context.Context, _ DoctorInput) (DoctorResult, error) {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown"
	}
	version := a.Worker.Version
	if version == "" {
		version = "unknown"
	}
	res := DoctorResult{Worker: a.Identity, Hostname: host, Version: version}
	res.Checks = append(res.Checks, DoctorCheck{Check: "worker version", Result: CheckOK,
		Detail: fmt.Sprintf("flinkmaint-worker %s on %s, identity %s", version, host, a.Identity)})
	storageChecks, hdfsRoots, authErr := a.doctorStorage(ctx)
	res.Checks = append(res.Checks, storageChecks...)
	if a.Worker.KerberosPrincipal != "" {
		res.Checks = append(res.Checks, kerberosCheck(a.Worker.KerberosPrincipal, authErr, hdfsRoots))
	}
	res.Checks = append(res.Checks, a.doctorKubernetes(ctx)...)
	res.Checks = append(res.Checks, a.doctorFlink(ctx)...)
	res.Checks = append(res.Checks, a.doctorNotify(ctx)...)
	return res, nil
}

// doctorRoot is one storage location the worker uses.
type doctorRoot struct {
	what, uri string
	// write: the worker writes there; a probe file proves it may.
	write bool
	// mustExist: the worker never creates it (writable and reference
	// roots are provisioned with their quotas).
	mustExist bool
}

func (a *Activities) doctorRoots() []doctorRoot {
	var roots []doctorRoot
	for _, r := range a.Worker.WritableRoots {
		roots = append(roots, doctorRoot{what: "writable root", uri: r, write: true, mustExist: true})
	}
	for _, r := range []struct{ what, uri string }{
		{"trash root", a.Cleanup.TrashRoot}, {"audit root", a.Cleanup.AuditRoot}, {"plan dir", a.Cleanup.PlanDir}, {"drill root", a.Drill.Root},
	} {
		if r.uri != "" {
			roots = append(roots, doctorRoot{what: r.what, uri: r.uri, write: true})
		}
	}
	for _, r := range a.Cleanup.ReferenceRoots {
		roots = append(roots, doctorRoot{what: "reference root", uri: r, mustExist: true})
	}
	return roots
}

// doctorStorage checks every root; it returns the number of hdfs://
// roots and the first authentication error, for the Kerberos finding.
func (a *Activities) doctorStorage(ctx context.Context) ([]DoctorCheck, int, error) {
	var (
		checks  []DoctorCheck
		authErr error
		hdfs    int
	)
	for _, r := range a.doctorRoots() {
		if u, err := storage.ParseURI(r.uri); err == nil && u.Scheme == "hdfs" {
			hdfs++
		}
		c, err := a.doctorRoot(ctx, r)
		if authErr == nil && errors.Is(err, storage.ErrAuthentication) {
			authErr = err
		}
		checks = append(checks, c)
	}
	if len(checks) == 0 {
		checks = append(checks, DoctorCheck{Check: "storage", Result: CheckWarn, Detail: "no storage root is configured: the worker can read but never clean up",
			Fix: "set storage.writableRoots and cleanup.trashRoot"})
	}
	return checks, hdfs, authErr
}

func (a *Activities) doctorRoot(ctx context.Context, r doctorRoot) (DoctorCheck, error) {
	check := "storage " + r.what + " " + r.uri
	ctx, cancel := context.WithTimeout(ctx, doctorCallTimeout)
	defer cancel()
	fail := func(err error, fix string) (DoctorCheck, error) {
		return DoctorCheck{Check: check, Result: CheckFail, Detail: err.Error(), Fix: fix}, err
	}
	if a.Storage == nil {
		return fail(errors.New("the worker has no storage"), "")
	}
	fsys, p, err := a.Storage.Resolve(ctx, r.uri)
	if err != nil {
		return fail(err, fixFor(err))
	}
	// The nearest directory that exists: a trash root or plan dir the
	// worker creates at first use is probed in its parent.
	dir, created := p, ""
	for {
		info, err := fsys.Stat(ctx, dir)
		if err == nil {
			if !info.IsDir {
				return fail(fmt.Errorf("%s is a file, not a directory", dir), "point "+r.what+" at a directory")
			}
			break
		}
		if !errors.Is(err, storage.ErrNotFound) {
			return fail(err, fixFor(err))
		}
		if r.mustExist {
			return fail(fmt.Errorf("%s does not exist", r.uri), "create it with its quota (hdfs dfs -mkdir -p), or correct the configuration; the worker creates no root")
		}
		if created == "" {
			created = " (created at first use)"
		}
		parent := storage.ParentOf(dir)
		if parent == dir {
			return fail(fmt.Errorf("no part of %s exists", r.uri), "correct the configuration")
		}
		dir = parent
	}
	if !r.write {
		if err := fsys.List(ctx, dir, 1, func([]storage.FileInfo) error { return errStopListing }); err != nil && !errors.Is(err, errStopListing) {
			return fail(err, fixFor(err))
		}
		return DoctorCheck{Check: check, Result: CheckOK, Detail: "readable"}, nil
	}
	probe := strings.TrimRight(dir, "/") + "/" + doctorProbeName + randomSuffix()
	if err := fsys.WriteFile(ctx, probe, []byte("flinkmaint doctor probe; safe to delete\n")); err != nil {
		return fail(fmt.Errorf("write a probe file in %s: %w", dir, err), fixFor(err))
	}
	if err := fsys.Remove(context.WithoutCancel(ctx), probe); err != nil {
		return fail(fmt.Errorf("remove the probe file %s: %w", probe, err), "remove it by hand; the worker must be able to delete in its roots")
	}
	detail := "readable and writable"
	if created != "" {
		detail = "writable in " + dir + created
	}
	return DoctorCheck{Check: check, Result: CheckOK, Detail: detail}, nil
}

var errStopListing = errors.New("stop listing")

func fixFor(err error) string {
	switch {
	case errors.Is(err, storage.ErrAuthentication):
		return "check the Kerberos keytab and principal (storage.kerberos) or hdfsUser"
	case errors.Is(err, storage.ErrPermission):
		return "grant the worker's HDFS user read, write and execute on it (hdfs dfs -setfacl or -chown)"
	case errors.Is(err, storage.ErrOutsideRoots):
		return "list it under storage.writableRoots"
	}
	return "check storage.defaultFS, storage.hadoopConfDir and that the NameNodes are reachable from the worker (storage.rpcTimeout bounds each call)"
}

func randomSuffix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func kerberosCheck(principal string, authErr error, hdfsRoots int) DoctorCheck {
	switch {
	case authErr != nil:
		return DoctorCheck{Check: "kerberos", Result: CheckFail, Detail: authErr.Error(),
			Fix: "check the keytab holds a current key of " + principal + " (klist -kt), krb5.conf, and the KDC is reachable"}
	case hdfsRoots == 0:
		return DoctorCheck{Check: "kerberos", Result: CheckWarn, Detail: "storage.kerberos is set but no root is on hdfs://",
			Fix: "leave storage.kerberos out, or write the roots as hdfs:// URIs"}
	}
	return DoctorCheck{Check: "kerberos", Result: CheckOK, Detail: fmt.Sprintf("authenticated as %s to every hdfs:// root", principal)}
}

func (a *Activities) doctorKubernetes(ctx context.Context) []DoctorCheck {
	var checks []DoctorCheck
	if a.Kubernetes != nil {
		cctx, cancel := context.WithTimeout(ctx, doctorCallTimeout)
		err := a.Kubernetes.Ready(cctx)
		cancel()
		if err != nil {
			return append(checks, DoctorCheck{Check: "kubernetes", Result: CheckFail, Detail: err.Error(),
				Fix: "check the worker's kubeconfig or in-cluster ServiceAccount and the network path to the API server"})
		}
		checks = append(checks, DoctorCheck{Check: "kubernetes", Result: CheckOK, Detail: "every API server is ready"})
	}
	if a.KubeAccess == nil {
		return checks
	}
	cctx, cancel := context.WithTimeout(ctx, 4*doctorCallTimeout)
	defer cancel()
	gaps, err := a.KubeAccess.CheckAccess(cctx)
	if err != nil {
		return append(checks, DoctorCheck{Check: "kubernetes access", Result: CheckFail, Detail: err.Error()})
	}
	var missing, optional, unknown, readOnly []string
	namespaces := 0
	for _, g := range gaps {
		where := g.Namespace
		if where == "" {
			where = "cluster scope"
		}
		if g.KubeCluster != "" {
			where = g.KubeCluster + "/" + where
		}
		if g.Namespace != "" {
			namespaces++
			if g.ReadOnly {
				readOnly = append(readOnly, where)
			}
		}
		if len(g.Missing) > 0 {
			missing = append(missing, where+": "+strings.Join(g.Missing, ", "))
		}
		if len(g.MissingOptional) > 0 {
			optional = append(optional, where)
		}
		if g.Unknown != "" {
			unknown = append(unknown, where)
		}
	}
	c := DoctorCheck{Check: "kubernetes access", Result: CheckOK, Detail: fmt.Sprintf("every permission the worker uses, in %d namespaces", namespaces)}
	if len(unknown) > 0 {
		c.Detail += " (asked one by one where the rules cannot be listed: " + strings.Join(unknown, ", ") + ")"
	}
	if len(readOnly) > 0 {
		c.Detail += "; rbacProfile windows (no delete verb) in " + strings.Join(readOnly, ", ") +
			": governance keeps the Kubernetes leftovers and FlinkStateSnapshot resources there (reason kubernetes-read-only)"
	}
	if len(optional) > 0 {
		c.Detail += "; governance restore cannot re-create trashed objects in " + strings.Join(optional, ", ") +
			" (the chart's rbac.restoreNamespaces, or deploy/kustomize/rbac/tenant-restore there, allow it)"
	}
	if len(missing) > 0 {
		c.Result, c.Detail = CheckFail, "missing: "+strings.Join(missing, "; ")
		c.Fix = "bind the ClusterRole flinkmaint-worker-tenant (in the chart, named after the release: <fullname>-worker-tenant) in each namespace named (the chart binds those of config.inventory.kubernetes and rbac.tenantNamespaces; or deploy/kustomize/rbac/tenant), and flinkmaint-worker-namespaces for a namespace selector"
	}
	return append(checks, c)
}

// doctorFlink asks every cluster of the inventory, and the drill cluster,
// for its overview, a few at a time.
func (a *Activities) doctorFlink(ctx context.Context) []DoctorCheck {
	var checks []DoctorCheck
	type target struct{ name, url string }
	var targets []target
	if a.Inventory != nil {
		cctx, cancel := context.WithTimeout(ctx, 4*doctorCallTimeout)
		inv, err := a.Inventory.Discover(cctx)
		cancel()
		if err != nil {
			return append(checks, DoctorCheck{Check: "inventory", Result: CheckFail, Detail: err.Error(),
				Fix: "check inventory.staticFile or inventory.kubernetes and the access above"})
		}
		checks = append(checks, DoctorCheck{Check: "inventory", Result: CheckOK,
			Detail: fmt.Sprintf("%d tenants, %d Flink clusters", len(inv.Tenants), len(inv.Clusters))})
		for _, c := range inv.Clusters {
			name := c.ClusterID
			if c.Namespace != "" {
				name = c.Namespace + "/" + name
			}
			targets = append(targets, target{name, c.RESTURL})
		}
	}
	if a.Drill.ClusterRESTURL != "" {
		targets = append(targets, target{"drill cluster", a.Drill.ClusterRESTURL})
	}
	if len(targets) == 0 {
		return checks
	}
	var (
		mu     sync.Mutex
		failed []string
		wg     sync.WaitGroup
		slots  = make(chan struct{}, 8)
	)
	for _, t := range targets {
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer func() { <-slots; wg.Done() }()
			cctx, cancel := context.WithTimeout(ctx, doctorCallTimeout)
			defer cancel()
			api, err := a.Flink.For(ctx, t.url)
			if err == nil {
				_, err = api.ClusterOverview(cctx)
			}
			if err != nil {
				mu.Lock()
				failed = append(failed, fmt.Sprintf("%s (%s): %v", t.name, t.url, err))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	sort.Strings(failed)
	c := DoctorCheck{Check: "flink clusters", Result: CheckOK, Detail: fmt.Sprintf("all %d answer on their REST API", len(targets))}
	if len(failed) > 0 {
		c.Result = CheckFail
		c.Detail = fmt.Sprintf("%d of %d do not answer: %s", len(failed), len(targets), strings.Join(failed, "; "))
		c.Fix = "check the JobManagers run and their REST endpoints are reachable from the worker (inventory restUrl or kubernetes restOverrides)"
	}
	return append(checks, c)
}

func (a *Activities) doctorNotify(ctx context.Context) []DoctorCheck {
	if a.Notifier == nil {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, doctorCallTimeout)
	defer cancel()
	var checks []DoctorCheck
	for _, o := range a.Notifier.Probe(cctx) {
		c := DoctorCheck{Check: "notify " + o.Sink, Result: CheckOK, Detail: "answers"}
		if o.Error != "" {
			c.Result, c.Detail = CheckFail, o.Error
			c.Fix = "check the sink's URL and the network path from the worker; notices to it are lost until then"
		}
		checks = append(checks, c)
	}
	return checks
}
