package governance

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/internal/acttest"
	"github.com/flinkmaint/flinkmaint/internal/cleanup"
	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/storage"
)

// quietFlink is a cluster with no live job and no file-system HA.
type quietFlink struct{ acttest.Flink }

func (*quietFlink) JobManagerConfig(context.Context) (flink.Config, error) {
	return flink.Config{}, nil
}

// approvedPlan is a sharded plan of two retired job dirs on the local file
// system, made by PlanCleanup as a run would make it and then approved.
type approvedPlan struct {
	a       *Activities
	summary PlanSummary
	garbage []string // the planned dirs, as local paths
	trash   string
}

func newApprovedPlan(t *testing.T) *approvedPlan {
	t.Helper()
	dir := t.TempDir()
	tenant, trash, plans := filepath.Join(dir, "tenant"), filepath.Join(dir, "trash"), filepath.Join(dir, "plans")
	longAgo := time.Now().Add(-30 * 24 * time.Hour)
	p := &approvedPlan{trash: trash}
	for _, job := range []string{strings.Repeat("a1", 16), strings.Repeat("b2", 16)} {
		jobDir := filepath.Join(tenant, "checkpoints", job)
		for name, size := range map[string]int{"chk-7/_metadata-partial": 5, "shared/s1": 70, "taskowned/t1": 30} {
			f := filepath.Join(jobDir, name)
			if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(f, make([]byte, size), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		p.garbage = append(p.garbage, jobDir)
	}
	for _, d := range []string{filepath.Join(tenant, "savepoints"), trash, plans} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Age the tree, children before their parents.
	var all []string
	if err := filepath.Walk(filepath.Join(tenant, "checkpoints"), func(path string, _ os.FileInfo, err error) error {
		all = append(all, path)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for i := len(all) - 1; i >= 0; i-- {
		if err := os.Chtimes(all[i], longAgo, longAgo); err != nil {
			t.Fatal(err)
		}
	}
	guard, err := storage.NewGuard(tenant, trash, plans)
	if err != nil {
		t.Fatal(err)
	}
	inv := inventory.Inventory{
		Tenants: []inventory.Tenant{{Name: "team-t", Root: "file://" + tenant}},
		Clusters: []inventory.Cluster{{Tenant: "team-t", ClusterID: "c1", Mode: inventory.ModeSession, RESTURL: "http://c1",
			CheckpointDir: "file://" + tenant + "/checkpoints", SavepointDir: "file://" + tenant + "/savepoints"}},
	}
	p.a = &Activities{Inventory: acttest.Inventory(inv), Flink: acttest.OneClient{C: &quietFlink{}}, Storage: &storage.Resolver{Guard: guard},
		Cleanup: core.CleanupSettings{TrashRoot: "file://" + trash, PlanDir: "file://" + plans}}
	var res PlanCleanupResult
	if err := acttest.Run(t, p.a, p.a.PlanCleanup, PlanCleanupInput{RunID: "approved", Scope: core.Scope{Tenants: []string{"team-t"}}, ShardItems: 1}, &res); err != nil {
		t.Fatal(err)
	}
	p.summary = res.Summary
	if p.summary.Items != 2 || p.summary.Shards != 2 {
		t.Fatalf("plan of %d items in %d shards; want the 2 retired job dirs, one a shard: %+v", p.summary.Items, p.summary.Shards, p.summary)
	}
	p.requireInPlace(t)
	return p
}

func (p *approvedPlan) input() ExecuteCleanupInput {
	return ExecuteCleanupInput{RunID: p.summary.RunID, PlanPath: p.summary.PlanPath, PlanSHA256: p.summary.PlanSHA256}
}

func (p *approvedPlan) part(shard int) ExecuteCleanupPartInput {
	return ExecuteCleanupPartInput{RunID: p.summary.RunID, PlanPath: p.summary.PlanPath, PlanSHA256: p.summary.PlanSHA256, Shard: shard}
}

// file is the local path of a file of the plan, by name.
func (p *approvedPlan) file(name string) string {
	return filepath.Join(filepath.Dir(strings.TrimPrefix(p.summary.PlanPath, "file://")), name)
}

// change rewrites one file of the plan with edit applied, and returns a
// function that puts the approved bytes back.
func (p *approvedPlan) change(t *testing.T, name string, edit func([]byte) []byte) (restore func()) {
	t.Helper()
	path := p.file(name)
	approved, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	changed := edit(bytes.Clone(approved))
	if bytes.Equal(changed, approved) {
		t.Fatalf("the edit left %s as approved", name)
	}
	if err := os.WriteFile(path, changed, 0o644); err != nil {
		t.Fatal(err)
	}
	return func() {
		if err := os.WriteFile(path, approved, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// requireInPlace stops the test unless every planned dir and its files
// are where they were, and nothing is in the trash.
func (p *approvedPlan) requireInPlace(t *testing.T) {
	t.Helper()
	var moved []string
	for _, d := range p.garbage {
		for _, f := range []string{"chk-7/_metadata-partial", "shared/s1", "taskowned/t1"} {
			if _, err := os.Stat(filepath.Join(d, f)); err != nil {
				moved = append(moved, filepath.Join(d, f))
			}
		}
	}
	entries, err := os.ReadDir(p.trash)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != "_audit" {
			moved = append(moved, "trash holds "+e.Name())
		}
	}
	if len(moved) > 0 {
		t.Fatalf("something was moved: %s", strings.Join(moved, "; "))
	}
}

// requireChanged fails the test unless err refuses the execution as a
// changed plan, naming the file that changed.
func requireChanged(t *testing.T, err error, name string) {
	t.Helper()
	if err == nil {
		t.Errorf("executed although %s changed after approval", name)
		return
	}
	if typ, nonRetryable := acttest.ErrType(t, err); typ != core.ErrTypeCleanupPlanChanged || !nonRetryable {
		t.Errorf("error %v (type %s, non-retryable %v); want a non-retryable %s", err, typ, nonRetryable, core.ErrTypeCleanupPlanChanged)
	}
	if !strings.Contains(err.Error(), name) {
		t.Errorf("error %v does not name the changed file %s", err, name)
	}
}

// TestExecuteRefusesAPlanChangedAfterApproval: the header (plan.json,
// whose sha256 was approved) or a shard changed after approval makes every
// execution refuse before it moves anything, naming the changed file; the
// plan as approved then executes, so the refusals were of a plan that
// would have moved files.
func TestExecuteRefusesAPlanChangedAfterApproval(t *testing.T) {
	p := newApprovedPlan(t)

	// The header: its action turned from trash into delete, which nobody
	// approved.
	restore := p.change(t, "plan.json", func(b []byte) []byte {
		return bytes.Replace(b, []byte(`"action":"trash"`), []byte(`"action":"delete"`), 1)
	})
	err := acttest.Run(t, p.a, p.a.ExecuteCleanup, p.input(), &ExecuteCleanupResult{})
	requireChanged(t, err, p.summary.PlanPath)
	err = acttest.Run(t, p.a, p.a.ExecuteCleanupPart, p.part(0), &ExecuteCleanupPartResult{})
	requireChanged(t, err, p.summary.PlanPath)
	err = acttest.Run(t, p.a, p.a.TallyCleanup, p.input(), &ExecuteCleanupResult{})
	requireChanged(t, err, p.summary.PlanPath)
	err = acttest.Run(t, p.a, p.a.VerifyCleanupPlan, p.input(), nil)
	requireChanged(t, err, p.summary.PlanPath)
	p.requireInPlace(t)
	restore()

	// A shard: its item's recorded reason rewritten. The header, whose
	// hash was approved, lists each shard's hash; the item keeps its path,
	// so only that hash tells the shard is not the one reviewed.
	edit := func(b []byte) []byte {
		return bytes.Replace(b, []byte(`"detail":"job absent`), []byte(`"detail":"approved by the owner; job absent`), 1)
	}
	for shard, name := range []string{"items-00001.jsonl", "items-00002.jsonl"} {
		restore = p.change(t, name, edit)
		err = acttest.Run(t, p.a, p.a.ExecuteCleanupPart, p.part(shard), &ExecuteCleanupPartResult{})
		requireChanged(t, err, name)
		// The check of the whole plan, before any part runs, finds it too.
		err = acttest.Run(t, p.a, p.a.VerifyCleanupPlan, p.input(), nil)
		requireChanged(t, err, name)
		p.requireInPlace(t)
		restore()
	}
	restore = p.change(t, "items-00001.jsonl", edit)
	err = acttest.Run(t, p.a, p.a.ExecuteCleanup, p.input(), &ExecuteCleanupResult{})
	requireChanged(t, err, "items-00001.jsonl")
	p.requireInPlace(t)
	restore()

	// The plan as approved passes the check and moves both dirs to the trash.
	if err := acttest.Run(t, p.a, p.a.VerifyCleanupPlan, p.input(), nil); err != nil {
		t.Fatal(err)
	}
	var res ExecuteCleanupResult
	if err := acttest.Run(t, p.a, p.a.ExecuteCleanup, p.input(), &res); err != nil {
		t.Fatal(err)
	}
	if res.Items != 2 {
		t.Fatalf("the approved plan executed %d items; want 2: %+v", res.Items, res)
	}
	for _, d := range p.garbage {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("%s still in place after the approved plan executed: %v", d, err)
		}
	}
}

// approve writes plan as the approved plan file name beside the approved
// plan's header and returns the input that executes it.
func (p *approvedPlan) approve(t *testing.T, name string, plan []byte) ExecuteCleanupInput {
	t.Helper()
	if err := os.WriteFile(p.file(name), plan, 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(plan)
	return ExecuteCleanupInput{RunID: p.summary.RunID, PlanPath: strings.TrimSuffix(p.summary.PlanPath, "plan.json") + name, PlanSHA256: hex.EncodeToString(sum[:])}
}

func requireErrType(t *testing.T, what string, err error, want, mention string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error; want %s", what, want)
		return
	}
	if typ, _ := acttest.ErrType(t, err); typ != want || !strings.Contains(err.Error(), mention) {
		t.Errorf("%s: %v (type %s); want %s mentioning %q", what, err, typ, want, mention)
	}
}

// What an execution refuses besides a changed plan, each before it moves
// anything: a worker without its ports, a shard the plan does not have, an
// approved header that does not vouch for its shards, Kubernetes objects on
// a worker without Kubernetes access; and a part whose executor fails is a
// failed part.
func TestExecuteRefusesWhatItCannotCarryOut(t *testing.T) {
	p := newApprovedPlan(t)
	for name, strip := range map[string]func(a *Activities){
		"no inventory": func(a *Activities) { a.Inventory = nil },
		"no flink":     func(a *Activities) { a.Flink = nil },
		"no storage":   func(a *Activities) { a.Storage = nil },
	} {
		a := *p.a
		strip(&a)
		err := acttest.Run(t, &a, a.ExecuteCleanup, p.input(), &ExecuteCleanupResult{})
		requireErrType(t, name, err, core.ErrTypeInventory, "no inventory source")
	}
	for _, shard := range []int{-1, 2} {
		err := acttest.Run(t, p.a, p.a.ExecuteCleanupPart, p.part(shard), &ExecuteCleanupPartResult{})
		requireErrType(t, "shard "+strconv.Itoa(shard), err, core.ErrTypeInvalidInput, "has shards 0 to 1")
	}
	header, err := os.ReadFile(p.file("plan.json"))
	if err != nil {
		t.Fatal(err)
	}
	renamed := p.approve(t, "renamed.json", bytes.Replace(header, []byte(`"name":"items-00001.jsonl"`), []byte(`"name":"x.jsonl"`), 1))
	err = acttest.Run(t, p.a, p.a.ExecuteCleanup, renamed, &ExecuteCleanupResult{})
	requireErrType(t, "a header naming a shard x.jsonl", err, core.ErrTypeCleanupPlanInvalid, `named "x.jsonl"`)
	objects := p.approve(t, "objects.json", []byte(`{"version":3,"policy":{"action":"trash"},"objects":[{"path":"kubernetes://ns/configmap/gone-cluster-config-map"}]}`))
	err = acttest.Run(t, p.a, p.a.ExecuteCleanup, objects, &ExecuteCleanupResult{})
	requireErrType(t, "objects without Kubernetes access", err, core.ErrTypeCleanupNotConfigured, "inventory.kubernetes is not configured")
	// A plan made before the worker's RBAC profile became windows.
	readOnly := *p.a
	readOnly.Orphans, readOnly.ReadOnlyKubeClusters = goneOrphans{}, map[string]bool{"": true}
	err = acttest.Run(t, &readOnly, readOnly.ExecuteCleanup, objects, &ExecuteCleanupResult{})
	requireErrType(t, "objects where the profile is windows", err, core.ErrTypeCleanupNotConfigured, "rbacProfile is windows")
	p.requireInPlace(t)

	// The trash root gone: the executor of each part refuses, and the
	// part fails.
	if err := os.RemoveAll(p.trash); err != nil {
		t.Fatal(err)
	}
	err = acttest.Run(t, p.a, p.a.ExecuteCleanupPart, p.part(0), &ExecuteCleanupPartResult{})
	if err == nil || !strings.Contains(err.Error(), "stat trash root") {
		t.Errorf("a part with no trash root: %v; want it failed, naming the trash root", err)
	}
	for _, d := range p.garbage {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s moved by a failed part: %v", d, err)
		}
	}
}

// goneOrphans is Kubernetes where every planned leftover has been deleted
// by someone else since planning.
type goneOrphans struct{ core.OrphanControl }

func (goneOrphans) ReadOrphan(context.Context, inventory.ObjectRef) (cleanup.ObjectSnapshot, error) {
	return cleanup.ObjectSnapshot{}, cleanup.ErrObjectNotFound
}

// A whole sharded plan executed at once carries out its Kubernetes
// objects after its shards, and its result tells each object's outcome.
func TestExecuteShardedPlanActsOnItsObjects(t *testing.T) {
	p := newApprovedPlan(t)
	header, err := os.ReadFile(p.file("plan.json"))
	if err != nil {
		t.Fatal(err)
	}
	const object = `"objects":[{"path":"kubernetes://ns/configmap/gone-cluster-config-map","kind":"ha-configmap","rule":"orphan-ha-configmap",` +
		`"tenant":"team-t","clusterId":"gone","ref":{"apiVersion":"v1","kind":"ConfigMap","namespace":"ns","name":"gone-cluster-config-map"},"uid":"u1","resourceVersion":"7"}],`
	in := p.approve(t, "with-objects.json", bytes.Replace(header, []byte(`"shards":[`), []byte(object+`"shards":[`), 1))
	p.a.Orphans = goneOrphans{}
	var res ExecuteCleanupResult
	if err := acttest.Run(t, p.a, p.a.ExecuteCleanup, in, &res); err != nil {
		t.Fatal(err)
	}
	if res.Items != 2 || len(res.ObjectOutcomes) != 1 || res.ObjectOutcomes[0].Outcome != string(cleanup.OutcomeGone) {
		t.Fatalf("result %+v, objects %+v; want both dirs moved and the object found gone", res, res.ObjectOutcomes)
	}
}

// The executor asks the inventory and Flink again right before it acts: a
// planned job dir whose job runs again is refused and stays.
func TestExecuteRefusesTheDirOfAJobLiveAgain(t *testing.T) {
	p := newApprovedPlan(t)
	back := strings.Repeat("a1", 16)
	p.a.Flink = acttest.OneClient{C: &quietFlink{acttest.Flink{Jobs: []flink.JobOverview{{ID: back, Name: "orders", State: flink.JobRunning}},
		Details: []flink.JobDetails{{ID: back, State: flink.JobRunning}}}}}
	var res ExecuteCleanupResult
	if err := acttest.Run(t, p.a, p.a.ExecuteCleanup, p.input(), &res); err != nil {
		t.Fatal(err)
	}
	if res.Items != 1 || len(res.Refused) != 1 || !strings.Contains(res.Refused[0].Path, back) {
		t.Fatalf("result %+v; want the dir of job %s refused, the other moved", res, back)
	}
	if _, err := os.Stat(p.garbage[0]); err != nil {
		t.Fatalf("the dir of the live job was moved: %v", err)
	}
}

// TestAPlanOfOneDocumentOrShards: shard size 0 (what runs started before
// plans were sharded pass) writes the plan as one document; a negative one
// is refused.
func TestAPlanOfOneDocumentOrShards(t *testing.T) {
	p := newApprovedPlan(t)
	var res PlanCleanupResult
	if err := acttest.Run(t, p.a, p.a.PlanCleanup, PlanCleanupInput{RunID: "whole", Scope: core.Scope{Tenants: []string{"team-t"}}}, &res); err != nil {
		t.Fatal(err)
	}
	if res.Summary.Shards != 0 || res.Summary.Items != 2 || res.Summary.PlanSHA256 == "" {
		t.Fatalf("plan %+v; want the 2 items in one document", res.Summary)
	}
	err := acttest.Run(t, p.a, p.a.PlanCleanup, PlanCleanupInput{RunID: "negative", Scope: core.Scope{Tenants: []string{"team-t"}}, ShardItems: -1}, &res)
	if typ, nonRetryable := acttest.ErrType(t, err); typ != core.ErrTypeInvalidInput || !nonRetryable {
		t.Fatalf("shard size -1: %v; want a non-retryable %s", err, core.ErrTypeInvalidInput)
	}
}
