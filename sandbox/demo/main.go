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
	"path/filepath"
	"time"

	"github.com/colinmarc/hdfs/v2"
	"gopkg.in/yaml.v3"

	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/sandbox"
)

func main() {
	out := flag.String("out", "var/demo", "directory for inventory.yaml, worker.yaml and window.yaml")
	perCluster := flag.Int("jobs", 2, "sample jobs per cluster")
	temporalAddr := flag.String("temporal", "localhost:7233", "Temporal frontend the demo worker uses")
	flag.Parse()
	if err := run(*out, *perCluster, *temporalAddr); err != nil {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		os.Exit(1)
	}
}

func run(out string, perCluster int, temporalAddr string) error {
	if perCluster < 1 || perCluster > 4 {
		return fmt.Errorf("-jobs=%d: use 1..4 (the sandbox clusters have 8 slots each)", perCluster)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	peers, err := sandbox.LoadPeers()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	abs, err := filepath.Abs(out)
	if err != nil {
		return err
	}
	demoRoot := peers.HDFS.URI + "/flinkmaint-demo"
	// The worker only writes under existing roots; create the demo's.
	hc, err := hdfs.NewClient(hdfs.ClientOptions{Addresses: []string{peers.HDFS.NameNode}, User: peers.HDFS.User})
	if err != nil {
		return err
	}
	err = hc.MkdirAll("/flinkmaint-demo", 0o755)
	_ = hc.Close()
	if err != nil {
		return fmt.Errorf("create %s: %w", demoRoot, err)
	}
	type pending struct {
		client *flink.Client
		name   string
		id     string
	}
	var submitted []pending
	var static inventory.Static
	for _, t := range peers.Tenants {
		static.Tenants = append(static.Tenants, inventory.Tenant{Name: t.Name, Root: peers.HDFS.URI + t.Root})
	}
	for _, c := range peers.Clusters {
		client, err := flink.New(flink.Options{BaseURL: c.RESTURL})
		if err != nil {
			return err
		}
		running, err := client.ListJobs(ctx)
		if err != nil {
			return fmt.Errorf("cluster %s: %w", c.ClusterID, err)
		}
		cl := inventory.Cluster{Tenant: c.Tenant, ClusterID: c.ClusterID, Mode: inventory.ModeSession, RESTURL: c.RESTURL,
			CheckpointDir: c.CheckpointDir, SavepointDir: c.SavepointDir, HAStorageDir: c.HAStorageDir}
		for i := 1; i <= perCluster; i++ {
			name := fmt.Sprintf("demo-%s-%d", c.ClusterID, i)
			args := []string{"--job-name", name, "--keys", "5000", "--value-bytes", "256", "--rate", "500"}
			cl.Jobs = append(cl.Jobs, inventory.JobSpec{Name: name, Restart: inventory.RestartRecipe{
				Kind: inventory.RestartRESTJarRun, Jar: peers.SampleJob.Jar, EntryClass: peers.SampleJob.EntryClass, ProgramArgs: args}})
			if isRunning(running, name) {
				fmt.Printf("job %s already running on %s\n", name, c.ClusterID)
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
		}
		static.Clusters = append(static.Clusters, cl)
	}
	// A window stops only RUNNING jobs; give new ones their first checkpoint.
	for _, p := range submitted {
		if err := awaitCheckpoint(ctx, p.client, p.id); err != nil {
			return fmt.Errorf("job %s: %w", p.name, err)
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
			"network":     map[string]interface{}{"autoConfirmAfter": "20s", "reminderInterval": "10s"},
			"restart":     map[string]interface{}{"canarySize": 1, "concurrency": 2, "soak": "10s"},
			// A dry run: the demo shows what cleanup would reclaim, and touches nothing.
			"cleanup": map[string]interface{}{"mode": "plan"},
		},
	}
	return writeYAML(filepath.Join(abs, "window.yaml"), window)
}

func awaitCheckpoint(ctx context.Context, c *flink.Client, jobID string) error {
	for {
		stats, err := c.Checkpoints(ctx, jobID)
		if err == nil && stats.Counts.Completed > 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no completed checkpoint yet: %w", ctx.Err())
		case <-time.After(time.Second):
		}
	}
}

func isRunning(jobs []flink.JobOverview, name string) bool {
	for _, j := range jobs {
		if j.Name == name && !j.State.IsGloballyTerminal() {
			return true
		}
	}
	return false
}

func writeYAML(path string, v interface{}) error {
	data, err := yaml.Marshal(v)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}
