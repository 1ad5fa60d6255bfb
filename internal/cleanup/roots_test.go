package cleanup

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/layout"
	"github.com/flinkmaint/flinkmaint/internal/storage"
)

func localResolver(t *testing.T, root string) Resolver {
	t.Helper()
	guard, err := storage.NewGuard("file://" + root)
	if err != nil {
		t.Fatal(err)
	}
	r := &storage.Resolver{Guard: guard}
	return r.Resolve
}

// TestScanRootsListsWhatExistsOnce: each configured root once, a missing
// one noted (not an error), sorted.
func TestScanRootsListsWhatExistsOnce(t *testing.T) {
	tmp := t.TempDir()
	for _, d := range []string{"a/checkpoints", "a/savepoints", "ha"} {
		if err := os.MkdirAll(filepath.Join(tmp, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	uri := func(p string) string { return "file://" + filepath.Join(tmp, p) }
	clusters := []inventory.Cluster{
		{ClusterID: "c1", CheckpointDir: uri("a/checkpoints"), SavepointDir: uri("a/savepoints"), HAStorageDir: uri("ha")},
		{ClusterID: "c2", CheckpointDir: uri("a/checkpoints") + "/", SavepointDir: uri("b/savepoints")},
	}
	fs, roots, notes, err := ScanRoots(context.Background(), localResolver(t, tmp), clusters)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range roots {
		got = append(got, r.Kind.String()+" "+strings.TrimPrefix(r.Path, "file://"+tmp))
	}
	want := "checkpoint-root /a/checkpoints,savepoint-root /a/savepoints,ha-root /ha"
	if fs == nil || strings.Join(got, ",") != want {
		t.Errorf("roots %v on %v; want %s", got, fs, want)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "b/savepoints of cluster c2 does not exist") {
		t.Errorf("notes %v; want the missing savepoint dir of c2", notes)
	}
}

// TestResolveDestinationsRefusesWhatCannotBeRecorded: an execution needs a
// home for its manifest and, to trash, a trash root on the items' file
// system; the guard admits only what lies under the plan's roots or those.
func TestResolveDestinationsRefusesWhatCannotBeRecorded(t *testing.T) {
	ctx := context.Background()
	tmp := t.TempDir()
	resolve := localResolver(t, tmp)
	item := "file://" + tmp + "/a/checkpoints/0123/chk-1"
	trashPlan := Plan{Policy: Policy{Action: ActionTrash}, Roots: []layout.Root{{Path: tmp + "/a/checkpoints", Kind: layout.CheckpointRoot}},
		Delete: []Item{{Path: item}}}
	deletePlan := trashPlan
	deletePlan.Policy.Action = ActionDelete
	objectsOnly := Plan{Policy: Policy{Action: ActionDelete}, Objects: []ObjectItem{{Path: ObjectScheme + "ns/pod/tm-1"}}}
	for name, tc := range map[string]struct {
		plan         Plan
		trash, audit string
	}{
		"trash plan without trash root":  {trashPlan, "", tmp + "/audit"},
		"delete plan without any root":   {deletePlan, "", ""},
		"objects alone without any root": {objectsOnly, "", ""},
	} {
		if _, err := ResolveDestinations(ctx, resolve, tc.plan, tc.trash, tc.audit); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: %v; want %v", name, err, ErrInvalidConfig)
		}
	}

	d, err := ResolveDestinations(ctx, resolve, trashPlan, "file://"+tmp+"/trash/", "")
	if err != nil {
		t.Fatal(err)
	}
	// The local file system spells its paths as file:// URIs.
	if d.Trash != "file://"+tmp+"/trash" || d.ManifestRoot() != "file://"+tmp+"/trash/_audit" {
		t.Errorf("trash %q manifest root %q", d.Trash, d.ManifestRoot())
	}
	base := d.FS.URI()
	if _, err := d.Guard.Check(base, item); err != nil {
		t.Errorf("the plan's item is refused: %v", err)
	}
	if _, err := d.Guard.Check(base, tmp+"/trash/run/x"); err != nil {
		t.Errorf("a trash path is refused: %v", err)
	}
	if _, err := d.Guard.Check(base, tmp+"/b/savepoints/savepoint-1"); !errors.Is(err, storage.ErrOutsideRoots) {
		t.Errorf("a path under no root: %v; want %v", err, storage.ErrOutsideRoots)
	}
	d, err = ResolveDestinations(ctx, resolve, deletePlan, "", tmp+"/audit")
	if err != nil || d.Trash != "" || d.ManifestRoot() != "file://"+tmp+"/audit" {
		t.Errorf("delete plan with an audit root: %+v %v", d, err)
	}
}
