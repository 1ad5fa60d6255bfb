// Command demo prepares the `make demo` fleet on the sandbox: it submits
// sample jobs to both Flink clusters (reusing jobs already running under
// the demo's names) and writes the inventory, worker config and window file
// the demo uses into var/demo/.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/colinmarc/hdfs/v2"
	"gopkg.in/yaml.v3"

	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
)

func main() {
	out := flag.String("out", "var/demo", "directory for inventory.yaml, worker.yaml, window.yaml and first-window.yaml")
	perCluster := flag.Int("jobs", 2, "sample jobs per cluster")
	temporalAddr := flag.String("temporal", "localhost:7233", "Temporal frontend the demo worker uses")
	flag.Parse()
	if err := run(*out, *perCluster, *temporalAddr); err != nil {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		os.Exit(1)
	}
}

// demoTenants name the demo's tenants, one per sandbox cluster in order;
// the first is the one near its quota, with months of debris.
var demoTenants = []string{"payments", "search"}

// Quota figures of the demo's tenants.
const (
	// nearQuotaPercent is how full the debris leaves the first tenant:
	// past the warning watermark (80), short of the critical one (90).
	nearQuotaPercent = 85
	// orphanedFiles is how many orphaned shared files it holds.
	orphanedFiles = 1200
	// roomyQuota is the other tenants' namespace quota.
	roomyQuota = 15000
)

func run(out string, perCluster int, temporalAddr string) error {
	if perCluster < 1 || perCluster > 4 {
		return fmt.Errorf("-jobs=%d: use 1..4 (the sandbox clusters have 8 slots each)", perCluster)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	peers, err := sandbox.LoadPeers()
	if err != nil {
		return err
	}
	if len(peers.Clusters) < len(demoTenants) {
		return fmt.Errorf("the demo needs %d sandbox clusters, peers.json lists %d", len(demoTenants), len(peers.Clusters))
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	abs, err := filepath.Abs(out)
	if err != nil {
		return err
	}
	const demoPath = "/flinkmaint-demo"
	demoRoot := peers.HDFS.URI + demoPath
	hc, err := hdfs.NewClient(hdfs.ClientOptions{Addresses: []string{peers.HDFS.NameNode}, User: peers.HDFS.User})
	if err != nil {
		return err
	}
	defer func() { _ = hc.Close() }()
	// The worker writes only under existing roots: the tenants' trees, the
	// trash (outside every tenant's quota) and the plans.
	for _, dir := range []string{"trash", "plans", "windows"} {
		if err := hc.MkdirAll(path.Join(demoPath, dir), 0o755); err != nil {
			return fmt.Errorf("create %s: %w", demoRoot+"/"+dir, err)
		}
	}
	type pending struct {
		client *flink.Client
		name   string
		id     string
	}
	var submitted []pending
	var static inventory.Static
	liveJobs := map[string][]liveJob{} // tenant -> its demo jobs
	clients := map[string]*flink.Client{}
	for i, tenant := range demoTenants {
		c := peers.Clusters[i]
		root := path.Join(demoPath, "tenants", tenant)
		for _, dir := range []string{"checkpoints", "savepoints", "ha"} {
			if err := hc.MkdirAll(path.Join(root, dir), 0o755); err != nil {
				return fmt.Errorf("create %s: %w", root+"/"+dir, err)
			}
		}
		// A root from an earlier run gets its quota again once the debris is in.
		if err := peers.ClearNamespaceQuota(ctx, root); err != nil {
			return fmt.Errorf("clear the quota of %s: %w", root, err)
		}
		static.Tenants = append(static.Tenants, inventory.Tenant{Name: tenant, Root: peers.HDFS.URI + root})
		client, err := flink.New(flink.Options{BaseURL: c.RESTURL})
		if err != nil {
			return err
		}
		clients[tenant] = client
		running, err := client.ListJobs(ctx)
		if err != nil {
			return fmt.Errorf("cluster %s: %w", c.ClusterID, err)
		}
		// The demo's tenants keep their state in their own trees. Their HA
		// root holds only the debris of a deleted cluster: the live
		// cluster's HA dir stays where the sandbox put it, and the planner
		// keeps it by the cluster's configured high-availability.cluster-id.
		cl := inventory.Cluster{Tenant: tenant, ClusterID: c.ClusterID, Mode: inventory.ModeSession, RESTURL: c.RESTURL,
			CheckpointDir: peers.HDFS.URI + root + "/checkpoints", SavepointDir: peers.HDFS.URI + root + "/savepoints",
			HAStorageDir: peers.HDFS.URI + root + "/ha"}
		for j := 1; j <= perCluster; j++ {
			name := fmt.Sprintf("demo-%s-%d", tenant, j)
			args := []string{"--job-name", name, "--checkpoint-dir", cl.CheckpointDir, "--keys", "5000", "--value-bytes", "256", "--rate", "500"}
			cl.Jobs = append(cl.Jobs, inventory.JobSpec{Name: name, Restart: inventory.RestartRecipe{
				Kind: inventory.RestartRESTJarRun, Jar: peers.SampleJob.Jar, EntryClass: peers.SampleJob.EntryClass, ProgramArgs: args}})
			if id := runningID(running, name); id != "" {
				fmt.Printf("job %s already running on %s\n", name, c.ClusterID)
				liveJobs[tenant] = append(liveJobs[tenant], liveJob{name, id})
				continue
			}
			jarID, err := client.UploadJar(ctx, peers.SampleJob.Jar)
			if err != nil {
				return err
			}
			res, err := client.RunJar(ctx, jarID, flink.RunJarRequest{EntryClass: peers.SampleJob.EntryClass, ProgramArgs: args})
			_ = client.DeleteJar(ctx, jarID)
			if err != nil {
				return fmt.Errorf("submit %s: %w", name, err)
			}
			fmt.Printf("job %s submitted to %s (%s)\n", name, c.ClusterID, res.JobID)
			submitted = append(submitted, pending{client, name, res.JobID})
			liveJobs[tenant] = append(liveJobs[tenant], liveJob{name, res.JobID})
		}
		static.Clusters = append(static.Clusters, cl)
	}
	// A window stops only RUNNING jobs, and a savepoint needs a running
	// job: give new ones their first checkpoint.
	for _, p := range submitted {
		if err := awaitCheckpoints(ctx, p.client, p.id, 1); err != nil {
			return fmt.Errorf("job %s: %w", p.name, err)
		}
	}

	// Months of debris in the first tenant, which then sits near its quota.
	near := demoTenants[0]
	nearRoot := path.Join(demoPath, "tenants", near)
	fmt.Printf("seeding tenant %s with the debris of months (takes about a minute)\n", near)
	d := &debris{hc: hc, fc: clients[near], uri: peers.HDFS.URI, root: nearRoot, jar: peers.SampleJob.Jar,
		main: peers.SampleJob.EntryClass, now: time.Now(), log: func(f string, a ...interface{}) { fmt.Printf("  "+f+"\n", a...) }}
	seeded, err := d.seed(ctx, liveJobs[near], orphanedFiles)
	if err != nil {
		return fmt.Errorf("debris of tenant %s: %w", near, err)
	}
	// The old savepoints stand for those taken before flinkmaint ran;
	// demo.sh adopts them for their logical jobs, as a team does.
	var adopt strings.Builder
	for _, j := range liveJobs[near] {
		for _, sp := range seeded.OldSavepoints[j.name] {
			fmt.Fprintf(&adopt, "%s/%s %s%s\n", peers.Clusters[0].ClusterID, j.name, peers.HDFS.URI, sp)
		}
	}
	if err := os.WriteFile(filepath.Join(abs, "adopt.txt"), []byte(adopt.String()), 0o644); err != nil {
		return err
	}
	cs, err := hc.GetContentSummary(nearRoot)
	if err != nil {
		return err
	}
	used := cs.FileCount() + cs.DirectoryCount()
	q := int64(used) * 100 / nearQuotaPercent
	if err := peers.SetNamespaceQuota(ctx, nearRoot, q); err != nil {
		return err
	}
	fmt.Printf("tenant %s: %d of a namespace quota of %d used (%d%%)\n", near, used, q, int64(used)*100/q)
	for _, t := range demoTenants[1:] {
		if err := peers.SetNamespaceQuota(ctx, path.Join(demoPath, "tenants", t), roomyQuota); err != nil {
			return err
		}
	}

	invPath := filepath.Join(abs, "inventory.yaml")
	if err := writeYAML(invPath, static); err != nil {
		return err
	}
	worker := map[string]interface{}{
		"temporal":  map[string]interface{}{"address": temporalAddr},
		"http":      map[string]interface{}{"listen": "127.0.0.1:9090"},
		"log":       map[string]interface{}{"level": "info", "format": "console"},
		"storage":   map[string]interface{}{"hdfsUser": peers.HDFS.User, "writableRoots": []string{demoRoot}},
		"cleanup":   map[string]interface{}{"trashRoot": demoRoot + "/trash", "planDir": demoRoot + "/plans"},
		"inventory": map[string]interface{}{"staticFile": invPath},
	}
	if err := writeYAML(filepath.Join(abs, "worker.yaml"), worker); err != nil {
		return err
	}
	window := map[string]interface{}{
		"windowId": "demo-" + time.Now().UTC().Format("20060102-150405"),
		"reason":   "make demo: rehearse a data-centre network change on the sandbox",
		"scope":    map[string]interface{}{"includeJobs": []string{"demo-*"}},
		"policy": map[string]interface{}{
			"manifestDir": demoRoot + "/windows",
			"savepoint":   map[string]interface{}{"concurrency": 2},
			"network":     map[string]interface{}{"autoConfirmAfter": "10s", "reminderInterval": "10s"},
			"restart":     map[string]interface{}{"canarySize": 1, "concurrency": 2, "soak": "5s"},
			// The cleanup acts at once, into the trash (recoverable); in
			// production the default, plan-and-approve, waits for a person.
			"cleanup": map[string]interface{}{"mode": "auto"},
		},
	}
	if err := writeYAML(filepath.Join(abs, "window.yaml"), window); err != nil {
		return err
	}
	// docs/first-window.md: the same jobs, steered by hand as in
	// production (no auto-confirm, the cleanup waits for approval).
	first := map[string]interface{}{
		"windowId": "first-" + time.Now().UTC().Format("20060102-150405"),
		"reason":   "docs/first-window.md: a first window steered by hand",
		"scope":    map[string]interface{}{"includeJobs": []string{"demo-*"}},
		"policy": map[string]interface{}{
			"manifestDir": demoRoot + "/windows",
			"savepoint":   map[string]interface{}{"concurrency": 2},
			"restart":     map[string]interface{}{"canarySize": 1, "concurrency": 2, "soak": "5s"},
			"cleanup":     map[string]interface{}{"mode": "plan-and-approve", "approvalTimeout": "1h"},
		},
	}
	return writeYAML(filepath.Join(abs, "first-window.yaml"), first)
}

// runningID is the id of the job of that name that still runs, or "".
func runningID(jobs []flink.JobOverview, name string) string {
	for _, j := range jobs {
		if j.Name == name && !j.State.IsGloballyTerminal() {
			return j.ID
		}
	}
	return ""
}

func writeYAML(path string, v interface{}) error {
	data, err := yaml.Marshal(v)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}
