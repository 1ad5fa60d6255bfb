package checkpoint

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/flinkmaint/flinkmaint/internal/testsupport/mdwrite"
)

// The fleet: the checkpoints of many incremental RocksDB jobs, laid out as
// sandbox.FleetTree builds them on HDFS. Job i (0-based) is <root>/<i+1 as
// 32 hex digits>; its shared files are shared/sst-NNNNN; checkpoint c
// (1-based) is chk-<c>, holding _metadata and one private file, meta. The
// _metadata of chk-c references shared files shift·(c-1) .. shift·(c-1)+refs-1,
// so consecutive checkpoints share refs-shift files, as incremental ones do.
var (
	fleetOut         = flag.String("fleet-out", "", "TestWriteFleetMetadata writes each checkpoint's _metadata under this local dir as <job>/chk-<c>/_metadata")
	fleetRoot        = flag.String("fleet-root", "hdfs://namenode:8020/fleet/checkpoints", "checkpoint root the fleet's _metadata name their files under")
	fleetJobs        = flag.Int("fleet-jobs", 3, "jobs in the fleet")
	fleetCheckpoints = flag.Int("fleet-checkpoints", 2, "retained checkpoints per job")
	fleetRefs        = flag.Int("fleet-refs", 20, "shared files each checkpoint references")
	fleetShift       = flag.Int("fleet-shift", 15, "shared files between the first references of consecutive checkpoints")
)

// fleetSubtasks is the keyed operator's parallelism; its shared files are
// dealt round-robin over the subtasks.
const fleetSubtasks = 4

func fleetJobDir(root string, job int) string { return fmt.Sprintf("%s/%032x", root, job+1) }

// fleetMetadata is the version 4 _metadata of checkpoint c of job, and the
// paths it must resolve to.
func fleetMetadata(root string, job, c, refs, shift int) ([]byte, []string) {
	jobDir := fleetJobDir(root, job)
	chk := fmt.Sprintf("%s/chk-%d", jobDir, c)
	shared := make([][]mdwrite.LocalFile, fleetSubtasks)
	var want []string
	for k := shift * (c - 1); k < shift*(c-1)+refs; k++ {
		path := fmt.Sprintf("%s/shared/sst-%05d", jobDir, k)
		s := k % fleetSubtasks
		shared[s] = append(shared[s], mdwrite.LocalFile{Name: fmt.Sprintf("%06d.sst", k), H: mdwrite.FileStream(64<<20, path)})
		want = append(want, path)
	}
	want = append(want, chk+"/meta")
	keyed := mdwrite.Operator{ID: mdwrite.OpID(10), Parallelism: fleetSubtasks, MaxParallelism: 128}
	per := int32(128 / fleetSubtasks)
	for s := range fleetSubtasks {
		// Every subtask's meta handle names the checkpoint's one private file.
		keyed.Subtasks = append(keyed.Subtasks, mdwrite.Subtask{Index: int32(s),
			ManagedKeyed: mdwrite.Incremental(11, int64(c), fmt.Sprintf("backend-%d", s), int32(s)*per, per,
				mdwrite.RelativeStream("meta", 4096), shared[s], nil, mdwrite.UUIDFor(job*1000+c*10+s))})
	}
	return mdwrite.Metadata(mdwrite.Spec{Version: 4, CheckpointID: int64(c), Operators: []mdwrite.Operator{keyed}}), want
}

// TestWriteFleetMetadata checks every fleet _metadata parses to exactly the
// files it names; with -fleet-out=dir it also writes them there, for the
// governance bench to upload.
func TestWriteFleetMetadata(t *testing.T) {
	if *fleetJobs < 1 || *fleetCheckpoints < 1 || *fleetRefs < 1 || *fleetShift < 0 {
		t.Fatalf("-fleet-jobs=%d -fleet-checkpoints=%d -fleet-refs=%d -fleet-shift=%d: want at least 1 job, checkpoint and reference, and a shift of 0 or more",
			*fleetJobs, *fleetCheckpoints, *fleetRefs, *fleetShift)
	}
	out := *fleetOut
	if out == "" {
		out = t.TempDir()
	}
	files := 0
	for j := range *fleetJobs {
		for c := 1; c <= *fleetCheckpoints; c++ {
			data, want := fleetMetadata(*fleetRoot, j, c, *fleetRefs, *fleetShift)
			loc := fmt.Sprintf("%s/chk-%d/_metadata", fleetJobDir(*fleetRoot, j), c)
			md, err := ParseBytes(data, loc)
			if err != nil {
				t.Fatalf("%s: %v", loc, err)
			}
			var got []string
			for _, f := range md.Files {
				got = append(got, f.Path)
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("%s references %v; want %v", loc, got, want)
			}
			local := filepath.Join(out, fmt.Sprintf("%032x", j+1), fmt.Sprintf("chk-%d", c), "_metadata")
			if err := os.MkdirAll(filepath.Dir(local), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(local, data, 0o644); err != nil {
				t.Fatal(err)
			}
			files++
		}
	}
	t.Logf("wrote %d _metadata under %s", files, out)
}
