// Package usage tells who fills a tenant's quota. It walks the tenant root
// once and attributes every file and directory to exactly one kind (see
// Kind) and, where the layout tells, to a logical job (tenant/cluster/job
// name): a checkpoint job dir and an HA blob dir or job result through the
// job id, a savepoint through its lineage. It compares each sample with
// the previous one, kept as one small JSON file per tenant under
// <tenant root>/.flinkmaint/usage/latest.json (see Sample).
//
// Files and bytes are what the walk saw; Dirs are counted too, because an
// HDFS namespace quota counts files and directories alike. The figures of
// all kinds add up to the whole tenant root, the root itself included.
package usage

import (
	"sort"
	"time"
)

// Kind is what an entry under a tenant root is.
type Kind string

// Kinds of entries.
const (
	// KindCheckpoints: a checkpoint root, its job dirs, chk-N dirs and
	// anything else in a job dir but shared/ and taskowned/.
	KindCheckpoints Kind = "checkpoints"
	KindShared      Kind = "shared"    // <job dir>/shared/
	KindTaskOwned   Kind = "taskowned" // <job dir>/taskowned/
	// KindSavepoints: a savepoint root and its savepoint-<6>-<12> dirs.
	KindSavepoints Kind = "savepoints"
	// KindHA: an HA storage dir, its cluster dirs and the job result store
	// in it.
	KindHA Kind = "ha"
	// KindTrash: cleanup's trash and audit roots, when they lie under the
	// tenant root (they should not: trash is meant to leave the quota).
	KindTrash Kind = "trash"
	// KindFlinkmaint: flinkmaint's own files: <tenant root>/.flinkmaint/
	// (savepoint catalog, usage samples) and the plan directory.
	KindFlinkmaint Kind = "flinkmaint"
	// KindStructure: the tenant root itself and the directories that only
	// lead to a configured root (directories, never files).
	KindStructure Kind = "structure"
	// KindUnknown: anything else, including what a root holds that its
	// layout does not explain.
	KindUnknown Kind = "unknown"
)

// Kinds returns every kind in report order.
func Kinds() []Kind {
	return []Kind{KindCheckpoints, KindShared, KindTaskOwned, KindSavepoints, KindHA, KindTrash, KindFlinkmaint, KindStructure, KindUnknown}
}

// Unattributed is the job of what no logical job can be told for.
const Unattributed = ""

// DefaultTop is how many top offenders a report names unless told;
// MaxTop bounds it.
const (
	DefaultTop = 10
	MaxTop     = 1000
)

// ownDir is flinkmaint's directory below a tenant root.
const ownDir = ".flinkmaint"

// Figures count files, directories and bytes; a difference may be negative.
type Figures struct {
	Files int64 `json:"files"`
	Dirs  int64 `json:"dirs"`
	Bytes int64 `json:"bytes"`
}

// Add returns f plus o.
func (f Figures) Add(o Figures) Figures {
	return Figures{Files: f.Files + o.Files, Dirs: f.Dirs + o.Dirs, Bytes: f.Bytes + o.Bytes}
}

// Sub returns f minus o.
func (f Figures) Sub(o Figures) Figures {
	return Figures{Files: f.Files - o.Files, Dirs: f.Dirs - o.Dirs, Bytes: f.Bytes - o.Bytes}
}

// Namespace is what the figures cost against a namespace quota.
func (f Figures) Namespace() int64 { return f.Files + f.Dirs }

// KindUsage is one kind's figures and, with a previous sample, its growth.
type KindUsage struct {
	Kind Kind `json:"kind"`
	Figures
	Growth *Figures `json:"growth,omitempty"`
}

// JobUsage is one logical job's figures in total and per kind (kinds it
// has nothing of are left out). Job is tenant/cluster/job, or Unattributed.
type JobUsage struct {
	Job string `json:"job"`
	Figures
	// Growth is nil on the first sample, and for a job the previous sample
	// left out to stay small.
	Growth *Figures    `json:"growth,omitempty"`
	Kinds  []KindUsage `json:"kinds"`
}

// Offender is a logical job among the largest of its tenant.
type Offender struct {
	Job string `json:"job"`
	Figures
	Growth *Figures `json:"growth,omitempty"`
}

// Total is a tenant's whole root.
type Total struct {
	Figures
	Growth *Figures `json:"growth,omitempty"`
}

// Report is one tenant's usage.
type Report struct {
	Tenant string    `json:"tenant"`
	Root   string    `json:"root"`
	At     time.Time `json:"at"`
	// Since is the time of the previous sample growth is counted from; nil
	// on the first sample, which has no growth.
	Since *time.Time `json:"since,omitempty"`
	Total Total      `json:"total"`
	// Kinds holds every kind, in the order of Kinds().
	Kinds []KindUsage `json:"kinds"`
	// Jobs are sorted by namespace use, largest first; a job the previous
	// sample had and this one lacks is listed with its negative growth.
	Jobs []JobUsage `json:"jobs,omitempty"`
	// TopFiles and TopBytes are the logical jobs with the most files and
	// the most bytes (unattributed items are no job).
	TopFiles []Offender `json:"topFiles"`
	TopBytes []Offender `json:"topBytes"`
}

// Attribution maps what the layout names to logical jobs.
type Attribution struct {
	// JobIDs maps Flink job ids to tenant/cluster/job (live jobs, job
	// history, the savepoint catalog).
	JobIDs map[string]string
	// Savepoints maps savepoint dirs, spelled as Tree.Savepoints spells
	// them, to tenant/cluster/job (savepoint lineage).
	Savepoints map[string]string
}

// Options tune Summarize.
type Options struct {
	Tenant string
	Root   string
	At     time.Time
	// Top is how many offenders to name; <= 0 means DefaultTop.
	Top int
	// Previous is the last sample, nil for none.
	Previous *Sample
}

// Summarize attributes a walk's figures to logical jobs and, with a
// previous sample, adds the growth since.
func Summarize(tree Tree, attr Attribution, opts Options) Report {
	rep := Report{Tenant: opts.Tenant, Root: opts.Root, At: opts.At}
	prev := opts.Previous
	if prev != nil {
		at := prev.At
		rep.Since = &at
	}
	growth := func(cur, old Figures) *Figures {
		if prev == nil {
			return nil
		}
		g := cur.Sub(old)
		return &g
	}
	var prevTotal Figures
	for _, k := range Kinds() {
		ku := KindUsage{Kind: k, Figures: tree.Kinds[k]}
		var old Figures
		if prev != nil {
			old = prev.Kinds[k]
		}
		ku.Growth = growth(ku.Figures, old)
		rep.Kinds = append(rep.Kinds, ku)
		rep.Total.Figures = rep.Total.Figures.Add(ku.Figures)
		prevTotal = prevTotal.Add(old)
	}
	rep.Total.Growth = growth(rep.Total.Figures, prevTotal)

	jobs := map[string]map[Kind]Figures{}
	add := func(job string, k Kind, f Figures) {
		if jobs[job] == nil {
			jobs[job] = map[Kind]Figures{}
		}
		jobs[job][k] = jobs[job][k].Add(f)
	}
	// A job id or savepoint without a logical job adds to Unattributed.
	placed := map[Kind]Figures{}
	for id, byKind := range tree.JobIDs {
		job := attr.JobIDs[id]
		for k, f := range byKind {
			add(job, k, f)
			placed[k] = placed[k].Add(f)
		}
	}
	for _, sp := range tree.Savepoints {
		f := Figures{Files: sp.Usage.Files, Dirs: sp.Usage.Dirs, Bytes: sp.Usage.Bytes}
		add(attr.Savepoints[sp.Path], KindSavepoints, f)
		placed[KindSavepoints] = placed[KindSavepoints].Add(f)
	}
	// What lies in no job dir or savepoint (roots, unknown entries, trash).
	for _, k := range Kinds() {
		if rest := tree.Kinds[k].Sub(placed[k]); rest != (Figures{}) {
			add(Unattributed, k, rest)
		}
	}
	if prev != nil {
		for job := range prev.Jobs {
			if _, ok := jobs[job]; !ok {
				jobs[job] = map[Kind]Figures{}
			}
		}
	}
	for job, byKind := range jobs {
		ju := JobUsage{Job: job, Kinds: []KindUsage{}}
		old, known := Figures{}, prev != nil
		var oldByKind map[Kind]Figures
		if prev != nil {
			oldByKind, known = prev.Jobs[job]
			known = known || !prev.JobsTruncated
		}
		for _, k := range Kinds() {
			f, o := byKind[k], oldByKind[k]
			old = old.Add(o)
			if f == (Figures{}) && o == (Figures{}) {
				continue
			}
			ku := KindUsage{Kind: k, Figures: f}
			if known {
				ku.Growth = growth(f, o)
			}
			ju.Kinds = append(ju.Kinds, ku)
			ju.Figures = ju.Figures.Add(f)
		}
		if known {
			ju.Growth = growth(ju.Figures, old)
		}
		if ju.Figures == (Figures{}) && (ju.Growth == nil || *ju.Growth == (Figures{})) {
			continue
		}
		rep.Jobs = append(rep.Jobs, ju)
	}
	sort.Slice(rep.Jobs, func(i, j int) bool {
		a, b := rep.Jobs[i], rep.Jobs[j]
		if a.Namespace() != b.Namespace() {
			return a.Namespace() > b.Namespace()
		}
		if a.Bytes != b.Bytes {
			return a.Bytes > b.Bytes
		}
		return a.Job < b.Job
	})
	top := opts.Top
	if top <= 0 {
		top = DefaultTop
	}
	rep.TopFiles = offenders(rep.Jobs, top, func(a, b Figures) bool {
		if a.Files != b.Files {
			return a.Files > b.Files
		}
		return a.Bytes > b.Bytes
	})
	rep.TopBytes = offenders(rep.Jobs, top, func(a, b Figures) bool {
		if a.Bytes != b.Bytes {
			return a.Bytes > b.Bytes
		}
		return a.Files > b.Files
	})
	return rep
}

// offenders returns the first n attributed jobs with anything stored, by
// more; ties go by name.
func offenders(jobs []JobUsage, n int, more func(a, b Figures) bool) []Offender {
	var out []Offender
	for _, j := range jobs {
		if j.Job != Unattributed && j.Figures != (Figures{}) {
			out = append(out, Offender{Job: j.Job, Figures: j.Figures, Growth: j.Growth})
		}
	}
	sort.Slice(out, func(i, k int) bool {
		if more(out[i].Figures, out[k].Figures) {
			return true
		}
		if more(out[k].Figures, out[i].Figures) {
			return false
		}
		return out[i].Job < out[k].Job
	})
	if len(out) > n {
		out = out[:n]
	}
	if out == nil {
		out = []Offender{}
	}
	return out
}
