package flinksim

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flinkmaint/flinkmaint/internal/flink"
)

// TestConcurrentStops stops 300 jobs on six clusters from many
// goroutines at once, with listings running alongside, and checks every job
// stopped exactly once with exactly one savepoint on disk.
func TestConcurrentStops(t *testing.T) {
	const clusters, perCluster, workers = 6, 50, 32
	f, err := Start(Options{SavepointDelay: 20 * time.Millisecond, CheckpointDelay: 10 * time.Millisecond, CheckpointInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	root := t.TempDir()
	type target struct{ cluster, url, jobID string }
	var targets []target
	for c := range clusters {
		id := fmt.Sprintf("cluster-%02d", c)
		url, err := f.AddClusterWith(id, ClusterConfig{CheckpointDir: filepath.Join(root, "checkpoints"), SavepointDir: filepath.Join(root, "savepoints")})
		if err != nil {
			t.Fatal(err)
		}
		for n := range perCluster {
			jobID := f.AddJob(id, fmt.Sprintf("job-%03d", n), "")
			targets = append(targets, target{id, url, jobID})
		}
	}
	ctx := testContext(t)
	clientsByURL := map[string]*flink.Client{}
	for _, tg := range targets {
		if clientsByURL[tg.url] == nil {
			clientsByURL[tg.url] = newClient(t, tg.url)
		}
	}

	work := make(chan target)
	var wg sync.WaitGroup
	var failures atomic.Int64
	stopListing := make(chan struct{})
	var listings atomic.Int64
	listerDone := make(chan struct{})
	go func() {
		defer close(listerDone)
		c := clientsByURL[targets[0].url]
		for {
			select {
			case <-stopListing:
				return
			default:
			}
			if _, err := c.ListJobs(ctx); err != nil {
				t.Errorf("list jobs: %v", err)
				return
			}
			listings.Add(1)
		}
	}()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for tg := range work {
				c := clientsByURL[tg.url]
				req := flink.StopRequest{TriggerID: flink.NewTriggerID()}
				tr, err := c.StopWithSavepoint(ctx, tg.jobID, req)
				if err == nil {
					// A retry with the same trigger ID must not stop twice.
					_, err = c.StopWithSavepoint(ctx, tg.jobID, req)
				}
				if err == nil {
					_, err = c.AwaitSavepoint(ctx, tg.jobID, tr.TriggerID)
				}
				if err != nil {
					failures.Add(1)
					t.Errorf("stop %s/%s: %v", tg.cluster, tg.jobID, err)
				}
			}
		}()
	}
	start := time.Now()
	for _, tg := range targets {
		work <- tg
	}
	close(work)
	wg.Wait()
	close(stopListing)
	<-listerDone
	t.Logf("%d stops in %s, %d listings alongside", len(targets), time.Since(start), listings.Load())
	if failures.Load() > 0 {
		t.FailNow()
	}

	for c := range clusters {
		for _, info := range f.Jobs(fmt.Sprintf("cluster-%02d", c)) {
			if info.State != "FINISHED" || info.Stops != 1 || info.StopTriggers != 1 || len(info.Savepoints) != 1 || info.DiskError != "" {
				t.Fatalf("job %+v: want FINISHED by exactly one stop", info)
			}
		}
	}
	entries, err := os.ReadDir(filepath.Join(root, "savepoints"))
	if err != nil || len(entries) != len(targets) {
		t.Fatalf("%d savepoint dirs (%v), want %d", len(entries), err, len(targets))
	}
}
