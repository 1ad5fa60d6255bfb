package cleanup

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flinkmaint/flinkmaint/internal/checkpoint"
	"github.com/flinkmaint/flinkmaint/internal/sandbox"
)

func TestGatherReadsMetadataPinsAndStateFiles(t *testing.T) {
	shared := sandbox.RequireShared(t)
	fixture := filepath.Join(shared, "fixtures/flink-metadata/v4-flink1.20-hashmap-savepoint/_metadata")
	md, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	e := newLocalEnv(t)
	const job = "0123456789abcdef0123456789abcdef"
	e.file("checkpoints/"+job+"/chk-2/_metadata", 0, e.past)
	if err := os.WriteFile(filepath.Join(e.tenant, "checkpoints", job, "chk-2", "_metadata"), md, 0o644); err != nil {
		t.Fatal(err)
	}
	e.file("checkpoints/"+job+"/chk-3/_metadata", 5, e.past) // five zero bytes: not metadata
	e.file("checkpoints/"+job+"/shared/sub/s1", 3, e.past)
	e.file("checkpoints/"+job+"/taskowned/t1", 0, e.past)
	e.file("savepoints/savepoint-012345-0123456789ab/"+PinMarkerName, 0, e.past)

	l, err := Gather(context.Background(), e.fs, e.roots(), GatherOptions{})
	if err != nil {
		t.Fatal(err)
	}
	good := l.Metadata[e.uri("checkpoints/"+job+"/chk-2/_metadata")]
	want, err := checkpoint.ParseFile(filepath.Join(e.tenant, "checkpoints", job, "chk-2", "_metadata"))
	if err != nil {
		t.Fatal(err)
	}
	if good.Refs == nil || len(good.Refs.Files) != len(want.Files) || len(want.Files) == 0 {
		t.Fatalf("chk-2 references %+v; want %d files", good, len(want.Files))
	}
	for _, f := range good.Refs.Files {
		if !strings.HasPrefix(f, e.uri("checkpoints/"+job+"/chk-2/")) {
			t.Errorf("reference %s not resolved into chk-2 as file:///", f)
		}
	}
	bad := l.Metadata[e.uri("checkpoints/"+job+"/chk-3/_metadata")]
	if bad.Refs != nil || bad.Error == "" {
		t.Fatalf("chk-3: %+v; want a parse error", bad)
	}
	if len(l.StateFiles) != 2 || l.StateFiles[0].Kind != KindSharedFile || l.StateFiles[1].Kind != KindTaskOwnedFile {
		t.Fatalf("state files %+v", l.StateFiles)
	}
	if len(l.PinMarkers) != 1 {
		t.Fatalf("pin markers %v", l.PinMarkers)
	}
	// The unparseable chk-3 keeps the whole job dir.
	plan, err := BuildPlan(Input{Now: e.past.AddDate(1, 0, 0), Listing: l})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Delete) != 0 {
		t.Fatalf("plan deletes %+v despite unparseable metadata", plan.Delete)
	}

	if _, err := Gather(context.Background(), e.fs, nil, GatherOptions{}); !errors.Is(err, ErrInvalidInput) {
		t.Fatalf("no roots: %v", err)
	}
	missing := e.roots()
	missing[0].Path += "-missing"
	if _, err := Gather(context.Background(), e.fs, missing, GatherOptions{}); err == nil {
		t.Fatal("a missing root gathered as empty")
	}
}
