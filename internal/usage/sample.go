package usage

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// SampleDir and SampleName place a tenant's latest sample:
// <tenant root>/.flinkmaint/usage/latest.json.
const (
	SampleDir  = ownDir + "/usage"
	SampleName = "latest.json"
)

// SampleVersion is the format of Sample; another is not read.
const SampleVersion = 1

// MaxSampleJobs bounds the jobs a sample keeps, so the file stays small
// (tens of kilobytes); the largest by namespace use are kept.
const MaxSampleJobs = 2000

// MaxSampleBytes bounds a sample read back.
const MaxSampleBytes = 4 << 20

// ErrSampleInvalid: a sample file that cannot be read as one.
var ErrSampleInvalid = errors.New("usage: invalid sample")

// Sample is what the next sample compares with: the figures per kind and
// per logical job, nothing else.
type Sample struct {
	Version int                         `json:"version"`
	Tenant  string                      `json:"tenant"`
	At      time.Time                   `json:"at"`
	Kinds   map[Kind]Figures            `json:"kinds"`
	Jobs    map[string]map[Kind]Figures `json:"jobs"`
	// JobsTruncated says jobs were left out: their growth is unknown next
	// time.
	JobsTruncated bool `json:"jobsTruncated,omitempty"`
}

// SamplePath is the sample file of the tenant root.
func SamplePath(tenantRoot string) string {
	return strings.TrimRight(tenantRoot, "/") + "/" + SampleDir + "/" + SampleName
}

// Sample is what the next report compares with. It needs the report's
// per-job rows.
func (r Report) Sample() Sample {
	s := Sample{Version: SampleVersion, Tenant: r.Tenant, At: r.At, Kinds: map[Kind]Figures{}, Jobs: map[string]map[Kind]Figures{}}
	for _, k := range r.Kinds {
		s.Kinds[k.Kind] = k.Figures
	}
	jobs := r.Jobs // largest first
	if len(jobs) > MaxSampleJobs {
		jobs, s.JobsTruncated = jobs[:MaxSampleJobs], true
	}
	for _, j := range jobs {
		if j.Figures == (Figures{}) {
			continue // gone since the previous sample
		}
		byKind := map[Kind]Figures{}
		for _, k := range j.Kinds {
			if k.Figures != (Figures{}) {
				byKind[k.Kind] = k.Figures
			}
		}
		s.Jobs[j.Job] = byKind
	}
	return s
}

// DecodeSample reads a sample file; what is not a sample of this version
// is ErrSampleInvalid.
func DecodeSample(data []byte) (Sample, error) {
	var s Sample
	if err := json.Unmarshal(data, &s); err != nil {
		return Sample{}, fmt.Errorf("%w: %v", ErrSampleInvalid, err)
	}
	if s.Version != SampleVersion {
		return Sample{}, fmt.Errorf("%w: version %d; this build reads version %d", ErrSampleInvalid, s.Version, SampleVersion)
	}
	if s.At.IsZero() {
		return Sample{}, fmt.Errorf("%w: no sample time", ErrSampleInvalid)
	}
	return s, nil
}
