package cleanup

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/flinkmaint/flinkmaint/internal/layout"
)

func codecListing() Listing {
	f := newFixture()
	t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	f.job("a1", t0)
	shared := f.state("a1", "shared", "s1", 100, t0)
	f.state("a1", "taskowned", "t1", 10, t0)
	f.chk("a1", 7, true, t0, shared)
	f.chk("a1", 8, false, t0)
	f.savepoint("a1b2c3", "0123456789ab", true, t0)
	f.l.Metadata[ckRoot+"/a1/chk-6/_metadata"] = MetadataResult{Error: "unknown format version 9"}
	f.l.PinMarkers = []string{spRoot + "/savepoint-a1b2c3-0123456789ab"}
	return f.l
}

// A listing comes back as it was written, in the line form and in the
// earlier single-value form.
func TestListingRoundTrip(t *testing.T) {
	l := codecListing()
	var buf bytes.Buffer
	if err := WriteListing(&buf, l); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(buf.String(), "\n"); lines != 1+len(l.StateFiles)+len(l.Metadata) {
		t.Fatalf("%d lines; want a header, one per state file and one per _metadata", lines)
	}
	got, err := ReadListing(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, l) {
		t.Fatalf("read back\n%+v\nwant\n%+v", got, l)
	}
	whole, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	got, err = ReadListing(bytes.NewReader(whole))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, l) {
		t.Fatalf("earlier form read back\n%+v\nwant\n%+v", got, l)
	}
	var again bytes.Buffer
	if err := WriteListing(&again, got); err != nil {
		t.Fatal(err)
	}
	var first bytes.Buffer
	_ = WriteListing(&first, l)
	if !bytes.Equal(first.Bytes(), again.Bytes()) {
		t.Fatal("the same listing written twice differs")
	}
}

// A listing read back shares strings: each job dir among its files, each
// referenced path with its state file.
func TestListingReadSharesStrings(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteListing(&buf, fleetListing(2)); err != nil {
		t.Fatal(err)
	}
	l, err := ReadListing(&buf)
	if err != nil {
		t.Fatal(err)
	}
	byPath := map[string]*byte{}
	for i, f := range l.StateFiles {
		byPath[f.Path] = unsafe.StringData(f.Path)
		if i > 0 && l.StateFiles[i-1].JobDir == f.JobDir && unsafe.StringData(l.StateFiles[i-1].JobDir) != unsafe.StringData(f.JobDir) {
			t.Fatalf("state file %d: job dir %s is a copy of the one before", i, f.JobDir)
		}
	}
	shared := 0
	for _, m := range l.Metadata {
		for _, f := range m.Refs.Files {
			if p, ok := byPath[f]; ok {
				if unsafe.StringData(f) != p {
					t.Fatalf("%s of %s is a copy of the state file's path", f, m.Refs.Metadata)
				}
				shared++
			}
		}
	}
	if shared != 2*10*20 {
		t.Fatalf("%d references shared with state files; want %d", shared, 2*10*20)
	}
}

// A listing cut short, with a line too many, of another format or with a
// _metadata twice is refused: a plan from it could miss a referrer.
func TestListingRefusesDamage(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteListing(&buf, codecListing()); err != nil {
		t.Fatal(err)
	}
	text := buf.String()
	lines := strings.SplitAfter(text, "\n")
	lines = lines[:len(lines)-1] // the empty tail after the last newline
	dupMeta := strings.Join(lines, "") + lines[len(lines)-1]
	dupMeta = strings.Replace(dupMeta, `"metadataLines":3`, `"metadataLines":4`, 1)
	for name, in := range map[string]string{
		"cut short":       strings.Join(lines[:len(lines)-1], ""),
		"a line too many": text + lines[len(lines)-1],
		"other format":    strings.Replace(text, ListingFormat, "flinkmaint-listing-lines/2", 1),
		"metadata twice":  dupMeta,
		"no header":       "",
		"entries in the header": strings.Replace(text, `"format":"`+ListingFormat+`"`,
			`"format":"`+ListingFormat+`","metadata":{}`, 1),
	} {
		_, err := ReadListing(strings.NewReader(in))
		if err == nil {
			t.Errorf("%s: read without error", name)
			continue
		}
		t.Logf("%s: %v", name, err)
	}
}

// fleetListing is the listing of jobs incremental jobs shaped like the
// governance fleet bench: 180 shared files each, 10 recent checkpoints
// whose _metadata name 20 of them, 15 on from the checkpoint before (25
// files no checkpoint names).
func fleetListing(jobs int) Listing {
	old := time.Now().Add(-30 * 24 * time.Hour)
	recent := time.Now().Add(-time.Hour * 2)
	l := Listing{Roots: []layout.Root{{Path: ckRoot, Kind: layout.CheckpointRoot}}, Metadata: map[string]MetadataResult{}}
	for j := range jobs {
		id := fmt.Sprintf("%032x", j+1)
		dir := jobDir(id)
		job := layout.JobCheckpoints{Root: ckRoot, Path: dir, JobID: id, HasShared: true, Total: layout.Usage{Files: 200, Dirs: 12, Newest: recent}}
		for k := range 180 {
			l.StateFiles = append(l.StateFiles, StateFile{Path: fmt.Sprintf("%s/shared/sst-%05d", dir, k), JobDir: dir, Kind: KindSharedFile, Size: 64 << 20, ModTime: old})
		}
		for c := 1; c <= 10; c++ {
			chk := fmt.Sprintf("%s/chk-%d", dir, c)
			job.Checkpoints = append(job.Checkpoints, layout.Checkpoint{ID: int64(c), Path: chk, Completed: true, Usage: layout.Usage{Files: 2, Dirs: 1, Newest: recent}})
			refs := &References{Metadata: chk + "/_metadata", Dir: chk, CheckpointID: int64(c)}
			for k := 15 * (c - 1); k < 15*(c-1)+20; k++ {
				refs.Files = append(refs.Files, fmt.Sprintf("%s/shared/sst-%05d", dir, k))
			}
			refs.Files = append(refs.Files, chk+"/meta")
			l.Metadata[refs.Metadata] = MetadataResult{Refs: refs}
		}
		l.Report.Jobs = append(l.Report.Jobs, job)
	}
	return l
}

// BenchmarkPlanFleetListing reads a written listing of 1,000 fleet jobs
// (200,000 files, 10,000 _metadata) back and plans it, as the plan
// activity does, and reports the live heap after each: what bounds the
// worker's memory at scale (P6 in docs/performance.md, at a fifth of its size).
func BenchmarkPlanFleetListing(b *testing.B) {
	const jobs = 1000
	var buf bytes.Buffer
	if err := WriteListing(&buf, fleetListing(jobs)); err != nil {
		b.Fatal(err)
	}
	live := func() float64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return float64(m.HeapAlloc) / (1 << 20)
	}
	base := live()
	var listed, planned float64
	for b.Loop() {
		l, err := ReadListing(bytes.NewReader(buf.Bytes()))
		if err != nil {
			b.Fatal(err)
		}
		listed = live() - base
		p, err := BuildPlan(Input{Now: time.Now(), Listing: l, Live: Live{Clusters: []LiveCluster{{ClusterID: "c1"}}}})
		if err != nil || len(p.Delete) != jobs*25 {
			b.Fatalf("%d items, %v; want %d", len(p.Delete), err, jobs*25)
		}
		planned = live() - base
		runtime.KeepAlive(l)
		runtime.KeepAlive(p)
	}
	b.ReportMetric(listed, "MiB-listing")
	b.ReportMetric(planned, "MiB-listing+plan")
}
