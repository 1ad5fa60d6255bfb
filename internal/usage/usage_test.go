package usage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/flinkmaint/flinkmaint/internal/layout"
	"github.com/flinkmaint/flinkmaint/internal/storage"
)

const (
	jobA   = "aaaaaa00000000000000000000000001" // orders: in the job history
	jobB   = "bbbbbb00000000000000000000000002" // gone from every history
	orders = "team-a/cluster-a/orders"
	spA    = "savepoint-aaaaaa-0123456789ab"
	spX    = "savepoint-cccccc-ba9876543210" // incomplete, no lineage
)

// writeFiles creates files (path -> content) and empty dirs under root.
func writeFiles(t *testing.T, root string, files map[string]string, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for p, data := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// tenantTree lays out one tenant root with something of every kind; the
// HA root lies one level down (flink/ha), so flink/ is a directory that
// only leads to a root.
func tenantTree(t *testing.T) (root string, lay Layout) {
	t.Helper()
	base := t.TempDir()
	root = filepath.Join(base, "team-a")
	writeFiles(t, root, map[string]string{
		"checkpoints/" + jobA + "/chk-3/_metadata":                     "meta",
		"checkpoints/" + jobA + "/chk-3/exclusive":                     "xxxxx",
		"checkpoints/" + jobA + "/chk-4/partial":                       "p",
		"checkpoints/" + jobA + "/shared/sst-1":                        "0123456789",
		"checkpoints/" + jobA + "/shared/sub/sst-2":                    "01234",
		"checkpoints/" + jobA + "/taskowned/t":                         "tt",
		"checkpoints/" + jobA + "/stray.txt":                           "s",
		"checkpoints/" + jobB + "/chk-1/_metadata":                     "mm",
		"checkpoints/" + jobB + "/shared/sst-9":                        "999",
		"checkpoints/notajob/file":                                     "nn",
		"savepoints/" + spA + "/_metadata":                             "sm",
		"savepoints/" + spA + "/state":                                 "ssss",
		"savepoints/" + spX + "/state":                                 "x",
		"savepoints/README":                                            "r",
		"flink/ha/cl1/completedCheckpoint0123456789ab":                 "c",
		"flink/ha/cl1/blob/job_" + jobA + "/blob_p-1":                  "bbb",
		"flink/ha/cl1/blob/no_job/blob_p-2":                            "b",
		"flink/ha/job-result-store/cl1/" + jobA + ".json":              "{}",
		"flink/ha/loose-file":                                          "l",
		"trash/run-1/user/app/team-a/checkpoints/" + jobB + "/chk-0/x": "tr",
		".flinkmaint/catalog/0123.json":                                "{}",
		"stray/deep/file":                                              "unknown",
		"loose.txt":                                                    "u",
	}, "checkpoints/"+jobB+"/taskowned", "empty-dir")
	outside := filepath.Join(base, "elsewhere")
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	lay = Layout{
		Root: root,
		Roots: []layout.Root{
			{Path: "file://" + root + "/checkpoints", Kind: layout.CheckpointRoot},
			{Path: root + "/savepoints/", Kind: layout.SavepointRoot},
			{Path: root + "/flink/ha", Kind: layout.HARoot},
			{Path: outside, Kind: layout.CheckpointRoot}, // not under the tenant: ignored
		},
		Trash: []string{root + "/trash"},
	}
	return root, lay
}

var (
	testJobID     = regexp.MustCompile(`^[0-9a-f]{32}$`)
	testSavepoint = regexp.MustCompile(`^savepoint-[0-9a-f]{6}-[0-9a-f]{12}$`)
)

// independentKind classifies a path of tenantTree from its place alone,
// written apart from the walker so the two can disagree.
func independentKind(rel string, isDir bool) Kind {
	seg := strings.Split(rel, "/")
	n := len(seg)
	switch {
	case rel == "." || rel == "flink":
		return KindStructure
	case seg[0] == "checkpoints":
		switch {
		case n == 1:
			return KindCheckpoints
		case !testJobID.MatchString(seg[1]) || (n == 2 && !isDir):
			return KindUnknown
		case n >= 3 && seg[2] == "shared":
			return KindShared
		case n >= 3 && seg[2] == "taskowned":
			return KindTaskOwned
		}
		return KindCheckpoints
	case seg[0] == "savepoints":
		if n == 1 || testSavepoint.MatchString(seg[1]) {
			return KindSavepoints
		}
		return KindUnknown
	case n >= 2 && seg[0] == "flink" && seg[1] == "ha":
		if n == 3 && !isDir {
			return KindUnknown
		}
		return KindHA
	case seg[0] == "trash":
		return KindTrash
	case seg[0] == ".flinkmaint":
		return KindFlinkmaint
	}
	return KindUnknown
}

// independentCount walks root with filepath.WalkDir.
func independentCount(t *testing.T, root string) (map[Kind]Figures, Figures) {
	t.Helper()
	kinds := map[Kind]Figures{}
	var total Figures
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		var f Figures
		if d.IsDir() {
			f.Dirs = 1
		} else {
			info, err := d.Info()
			if err != nil {
				return err
			}
			f.Files, f.Bytes = 1, info.Size()
		}
		k := independentKind(filepath.ToSlash(rel), d.IsDir())
		kinds[k] = kinds[k].Add(f)
		total = total.Add(f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return kinds, total
}

func localFS(t *testing.T, root string) storage.FileSystem {
	t.Helper()
	g, err := storage.NewGuard(root)
	if err != nil {
		t.Fatal(err)
	}
	return storage.NewLocal(g)
}

func attribution() Attribution {
	return Attribution{
		JobIDs:     map[string]string{jobA: orders},
		Savepoints: map[string]string{},
	}
}

func kindOf(r Report, k Kind) KindUsage {
	for _, ku := range r.Kinds {
		if ku.Kind == k {
			return ku
		}
	}
	return KindUsage{}
}

func jobOf(r Report, job string) (JobUsage, bool) {
	for _, j := range r.Jobs {
		if j.Job == job {
			return j, true
		}
	}
	return JobUsage{}, false
}

func TestWalkAttributesEveryEntryToOneKind(t *testing.T) {
	ctx := context.Background()
	root, lay := tenantTree(t)
	fsys := localFS(t, root)
	var progressed int64
	tree, err := Walk(ctx, fsys, lay, func(n int64) { progressed = n })
	if err != nil {
		t.Fatal(err)
	}
	attr := attribution()
	attr.Savepoints["file://"+root+"/savepoints/"+spA] = orders
	rep := Summarize(tree, attr, Options{Tenant: "team-a", Root: root, At: time.Unix(1000, 0), Top: 5})

	want, total := independentCount(t, root)
	var sum Figures
	for _, k := range Kinds() {
		got := kindOf(rep, k)
		if got.Figures != want[k] {
			t.Errorf("kind %s: walker %+v, independent walk %+v", k, got.Figures, want[k])
		}
		if got.Growth != nil {
			t.Errorf("kind %s has growth %+v on the first sample; want none", k, *got.Growth)
		}
		sum = sum.Add(got.Figures)
	}
	if sum != total || rep.Total.Figures != total {
		t.Errorf("sum of kinds %+v, report total %+v; want the walk's %+v", sum, rep.Total.Figures, total)
	}
	if progressed != total.Files+total.Dirs {
		t.Errorf("last progress %d entries; want %d", progressed, total.Files+total.Dirs)
	}
	if rep.Since != nil {
		t.Errorf("first sample reports growth since %v; want none", rep.Since)
	}

	// orders: job dir A (checkpoints, shared, taskowned), its savepoint,
	// its HA blob dir and job result.
	o, ok := jobOf(rep, orders)
	if !ok {
		t.Fatalf("no row for %s in %+v", orders, rep.Jobs)
	}
	wantOrders := map[Kind]Figures{
		KindCheckpoints: {Files: 4, Dirs: 3, Bytes: 4 + 5 + 1 + 1}, // job dir, chk-3, chk-4; stray.txt counts here
		KindShared:      {Files: 2, Dirs: 2, Bytes: 15},
		KindTaskOwned:   {Files: 1, Dirs: 1, Bytes: 2},
		KindSavepoints:  {Files: 2, Dirs: 1, Bytes: 6},
		KindHA:          {Files: 2, Dirs: 1, Bytes: 5}, // blob/job_A/ and its blob, the job result
	}
	for _, ku := range o.Kinds {
		if ku.Figures != wantOrders[ku.Kind] {
			t.Errorf("orders %s: %+v; want %+v", ku.Kind, ku.Figures, wantOrders[ku.Kind])
		}
		delete(wantOrders, ku.Kind)
	}
	if len(wantOrders) > 0 {
		t.Errorf("orders lacks kinds %v", wantOrders)
	}
	// Every kind's per-job rows add up to the kind.
	perKind := map[Kind]Figures{}
	for _, j := range rep.Jobs {
		var jt Figures
		for _, ku := range j.Kinds {
			perKind[ku.Kind] = perKind[ku.Kind].Add(ku.Figures)
			jt = jt.Add(ku.Figures)
		}
		if jt != j.Figures {
			t.Errorf("job %q: kinds add up to %+v, total says %+v", j.Job, jt, j.Figures)
		}
	}
	for _, k := range Kinds() {
		if perKind[k] != kindOf(rep, k).Figures {
			t.Errorf("kind %s: jobs add up to %+v, kind says %+v", k, perKind[k], kindOf(rep, k).Figures)
		}
	}
	// Job B's id is unknown: its checkpoints are unattributed.
	un, ok := jobOf(rep, Unattributed)
	if !ok {
		t.Fatal("no unattributed row")
	}
	for _, ku := range un.Kinds {
		if ku.Kind == KindShared && ku.Figures != (Figures{Files: 1, Dirs: 1, Bytes: 3}) {
			t.Errorf("unattributed shared %+v; want job B's shared/", ku.Figures)
		}
	}
	if len(rep.TopFiles) != 1 || rep.TopFiles[0].Job != orders || len(rep.TopBytes) != 1 {
		t.Errorf("top offenders %+v / %+v; want orders alone (unattributed is no job)", rep.TopFiles, rep.TopBytes)
	}
	// The savepoints the walk saw, for lineage.
	if len(tree.Savepoints) != 2 || !tree.Savepoints[0].Completed || tree.Savepoints[1].Completed || tree.Savepoints[0].JobIDPrefix != "aaaaaa" {
		t.Errorf("savepoints %+v; want %s completed and %s not", tree.Savepoints, spA, spX)
	}
}

func TestWalkSharedCheckpointAndSavepointRoot(t *testing.T) {
	// state.savepoints.dir may equal state.checkpoints.dir: job dirs and
	// savepoint dirs side by side under one root.
	root := filepath.Join(t.TempDir(), "t")
	writeFiles(t, root, map[string]string{
		"state/" + jobA + "/chk-1/_metadata": "m",
		"state/" + spA + "/_metadata":        "sm",
		"state/other":                        "o",
	})
	lay := Layout{Root: root, Roots: []layout.Root{{Path: root + "/state", Kind: layout.CheckpointRoot}, {Path: root + "/state", Kind: layout.SavepointRoot}}}
	tree, err := Walk(context.Background(), localFS(t, root), lay, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep := Summarize(tree, attribution(), Options{Tenant: "t", At: time.Unix(1, 0)})
	for k, want := range map[Kind]Figures{
		KindStructure:   {Dirs: 1},
		KindCheckpoints: {Files: 1, Dirs: 3, Bytes: 1},
		KindSavepoints:  {Files: 1, Dirs: 1, Bytes: 2},
		KindUnknown:     {Files: 1, Bytes: 1},
	} {
		if got := kindOf(rep, k).Figures; got != want {
			t.Errorf("%s: %+v; want %+v", k, got, want)
		}
	}
}

func TestGrowthSincePreviousSample(t *testing.T) {
	ctx := context.Background()
	root, lay := tenantTree(t)
	fsys := localFS(t, root)
	attr := attribution()
	attr.Savepoints["file://"+root+"/savepoints/"+spA] = orders
	attr.JobIDs[jobB] = "team-a/cluster-a/payments"
	first, err := Walk(ctx, fsys, lay, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep1 := Summarize(first, attr, Options{Tenant: "team-a", At: time.Unix(1000, 0)})
	data, err := json.Marshal(rep1.Sample())
	if err != nil {
		t.Fatal(err)
	}
	prev, err := DecodeSample(data)
	if err != nil {
		t.Fatal(err)
	}

	// Since then: orders wrote a checkpoint (a dir and 2 files, 7 bytes);
	// payments' whole job dir was cleaned up.
	writeFiles(t, root, map[string]string{"checkpoints/" + jobA + "/chk-5/_metadata": "meta", "checkpoints/" + jobA + "/chk-5/x": "abc"})
	if err := os.RemoveAll(filepath.Join(root, "checkpoints", jobB)); err != nil {
		t.Fatal(err)
	}
	second, err := Walk(ctx, fsys, lay, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep2 := Summarize(second, attr, Options{Tenant: "team-a", At: time.Unix(2000, 0), Previous: &prev})
	if rep2.Since == nil || !rep2.Since.Equal(time.Unix(1000, 0)) {
		t.Fatalf("since %v; want the previous sample's time", rep2.Since)
	}
	for _, k := range Kinds() {
		g := kindOf(rep2, k).Growth
		if g == nil {
			t.Fatalf("kind %s has no growth with a previous sample", k)
		}
		if want := kindOf(rep2, k).Figures.Sub(kindOf(rep1, k).Figures); *g != want {
			t.Errorf("kind %s growth %+v; want %+v", k, *g, want)
		}
	}
	if g := kindOf(rep2, KindCheckpoints).Growth; *g != (Figures{Files: 2 - 1, Dirs: 1 - 2, Bytes: 7 - 2}) {
		// +chk-5 (1 dir, 2 files, 7 bytes), -job B's job dir and chk-1 (2 dirs; 1 file, 2 bytes)
		t.Errorf("checkpoints growth %+v", *g)
	}
	o, _ := jobOf(rep2, orders)
	if o.Growth == nil || *o.Growth != (Figures{Files: 2, Dirs: 1, Bytes: 7}) {
		t.Errorf("orders growth %+v; want the new checkpoint", o.Growth)
	}
	p, ok := jobOf(rep2, "team-a/cluster-a/payments")
	if !ok || p.Figures != (Figures{}) || p.Growth == nil || *p.Growth != (Figures{Files: -2, Dirs: -4, Bytes: -5}) {
		t.Errorf("payments %+v (growth %+v); want a row with nothing left and its whole job dir as negative growth", p, p.Growth)
	}
	if rep2.Total.Growth == nil || *rep2.Total.Growth != rep2.Total.Figures.Sub(rep1.Total.Figures) {
		t.Errorf("total growth %+v", rep2.Total.Growth)
	}
}

func TestGrowthAfterTruncatedSample(t *testing.T) {
	prev := Sample{Version: SampleVersion, Tenant: "t", At: time.Unix(5, 0), JobsTruncated: true,
		Kinds: map[Kind]Figures{KindCheckpoints: {Files: 1}},
		Jobs:  map[string]map[Kind]Figures{"t/c/kept": {KindCheckpoints: {Files: 1}}}}
	tree := Tree{Kinds: map[Kind]Figures{KindCheckpoints: {Files: 3, Dirs: 2}},
		JobIDs: map[string]map[Kind]Figures{jobA: {KindCheckpoints: {Files: 2, Dirs: 1}}, jobB: {KindCheckpoints: {Files: 1, Dirs: 1}}}}
	rep := Summarize(tree, Attribution{JobIDs: map[string]string{jobA: "t/c/kept", jobB: "t/c/new"}}, Options{Tenant: "t", At: time.Unix(9, 0), Previous: &prev})
	if j, _ := jobOf(rep, "t/c/kept"); j.Growth == nil || *j.Growth != (Figures{Files: 1, Dirs: 1}) {
		t.Errorf("kept: growth %+v", j.Growth)
	}
	if j, _ := jobOf(rep, "t/c/new"); j.Growth != nil {
		t.Errorf("new job growth %+v; the previous sample was cut short, so it is unknown", *j.Growth)
	}
}

func TestSampleIsBounded(t *testing.T) {
	tree := Tree{Kinds: map[Kind]Figures{}, JobIDs: map[string]map[Kind]Figures{}}
	attr := Attribution{JobIDs: map[string]string{}}
	for i := range MaxSampleJobs + 10 {
		id := fmt.Sprintf("%032x", i)
		tree.JobIDs[id] = map[Kind]Figures{KindCheckpoints: {Files: int64(i + 1)}}
		attr.JobIDs[id] = "t/c/job-" + id
	}
	s := Summarize(tree, attr, Options{Tenant: "t", At: time.Unix(1, 0)}).Sample()
	if len(s.Jobs) != MaxSampleJobs || !s.JobsTruncated {
		t.Fatalf("sample keeps %d jobs, truncated %v; want %d and true", len(s.Jobs), s.JobsTruncated, MaxSampleJobs)
	}
}

func TestTopOffenders(t *testing.T) {
	tree := Tree{Kinds: map[Kind]Figures{}, JobIDs: map[string]map[Kind]Figures{
		"1": {KindCheckpoints: {Files: 10, Bytes: 1}},
		"2": {KindShared: {Files: 5, Bytes: 100}},
		"3": {KindCheckpoints: {Files: 7, Bytes: 50}},
		"4": {KindCheckpoints: {Files: 99, Bytes: 999}}, // unattributed
	}}
	attr := Attribution{JobIDs: map[string]string{"1": "t/c/a", "2": "t/c/b", "3": "t/c/c"}}
	rep := Summarize(tree, attr, Options{Tenant: "t", At: time.Unix(1, 0), Top: 2})
	names := func(os []Offender) string {
		var s []string
		for _, o := range os {
			s = append(s, o.Job)
		}
		return strings.Join(s, ",")
	}
	if got := names(rep.TopFiles); got != "t/c/a,t/c/c" {
		t.Errorf("top by files %s; want t/c/a,t/c/c", got)
	}
	if got := names(rep.TopBytes); got != "t/c/b,t/c/c" {
		t.Errorf("top by bytes %s; want t/c/b,t/c/c", got)
	}
}

func TestDecodeSampleRejectsWhatItCannotRead(t *testing.T) {
	for name, data := range map[string]string{
		"not json":      "{",
		"other version": `{"version": 99, "tenant": "t"}`,
		"no time":       `{"version": 1, "tenant": "t"}`,
	} {
		if _, err := DecodeSample([]byte(data)); err == nil {
			t.Errorf("%s: decoded; want an error", name)
		} else if !errors.Is(err, ErrSampleInvalid) {
			t.Errorf("%s: %v; want ErrSampleInvalid", name, err)
		}
	}
}

func TestWalkMissingRoot(t *testing.T) {
	root := filepath.Join(t.TempDir(), "gone")
	_, err := Walk(context.Background(), localFS(t, filepath.Dir(root)), Layout{Root: root}, nil)
	if !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("walk of a missing root: %v; want storage.ErrNotFound", err)
	}
}

func TestSamplePath(t *testing.T) {
	if got := SamplePath("hdfs://nn:8020/user/app/team-a/"); got != "hdfs://nn:8020/user/app/team-a/.flinkmaint/usage/latest.json" {
		t.Fatalf("SamplePath = %s", got)
	}
}

func TestMarkdownAndCells(t *testing.T) {
	since := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	r := Report{Tenant: "t", Root: "hdfs://nn/t", Since: &since,
		Kinds:    []KindUsage{{Kind: KindShared, Figures: Figures{Files: 3, Dirs: 1, Bytes: 30}, Growth: &Figures{Files: -1}}},
		Total:    Total{Figures: Figures{Files: 3, Dirs: 1, Bytes: 30}, Growth: &Figures{Files: -1}},
		TopFiles: []Offender{{Job: "t/c/a|b", Figures: Figures{Files: 3}}}}
	md := r.Markdown()
	for _, want := range []string{"### t (`hdfs://nn/t`)", "growth since the sample of 2026-01-02T03:04:05Z",
		"| shared | 3 | 1 | 30 | -1 | 0 | 0 |", "| total | 3 | 1 | 30 | -1 | 0 | 0 |", "| t/c/a/b | 3 | 0 | 0 | - | - | - |"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "by bytes") {
		t.Errorf("markdown lists an empty top by bytes:\n%s", md)
	}
	if got := strings.Join(GrowthCells(&Figures{Files: 2, Dirs: 0, Bytes: -5}), " "); got != "+2 0 -5" {
		t.Errorf("GrowthCells = %q", got)
	}
	if JobName(Unattributed) != "unattributed" {
		t.Errorf("JobName(Unattributed) = %q", JobName(Unattributed))
	}
}
