package cleanup

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/flinkmaint/flinkmaint/internal/layout"
)

// ListingFormat names the line-by-line form of a Listing: a header, then
// one line per state file, then one per _metadata. Written and read a
// value at a time, a listing of a million files never exists as one JSON
// document in memory (which took more than a GiB).
const ListingFormat = "flinkmaint-listing-lines/1"

// listingHeader is the first value. Without Format it is a whole Listing
// in one value, as gathered by earlier versions.
type listingHeader struct {
	Format     string                    `json:"format,omitempty"`
	Roots      []layout.Root             `json:"roots"`
	Report     layout.Report             `json:"report"`
	PinMarkers []string                  `json:"pinMarkers,omitempty"`
	StartedAt  time.Time                 `json:"startedAt,omitzero"`
	StateFiles json.RawMessage           `json:"stateFiles,omitempty"`
	Metadata   map[string]MetadataResult `json:"metadata,omitempty"`
	// Counts of the lines that follow, so a cut-off listing is refused.
	StateFileLines int `json:"stateFileLines,omitempty"`
	MetadataLines  int `json:"metadataLines,omitempty"`
}

type metadataLine struct {
	Path   string         `json:"path"`
	Result MetadataResult `json:"result"`
}

// WriteListing writes l in ListingFormat; _metadata in path order, so the
// same listing always gives the same bytes.
func WriteListing(w io.Writer, l Listing) error {
	enc := json.NewEncoder(w)
	h := listingHeader{Format: ListingFormat, Roots: l.Roots, Report: l.Report, PinMarkers: l.PinMarkers, StartedAt: l.StartedAt,
		StateFileLines: len(l.StateFiles), MetadataLines: len(l.Metadata)}
	if err := enc.Encode(h); err != nil {
		return err
	}
	for _, f := range l.StateFiles {
		if err := enc.Encode(f); err != nil {
			return err
		}
	}
	paths := make([]string, 0, len(l.Metadata))
	for p := range l.Metadata {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		if err := enc.Encode(metadataLine{Path: p, Result: l.Metadata[p]}); err != nil {
			return err
		}
	}
	return nil
}

// ReadListing reads a listing WriteListing wrote, or an earlier whole
// one. Anything short, long or of another format is an error.
func ReadListing(r io.Reader) (Listing, error) {
	dec := json.NewDecoder(r)
	var h listingHeader
	if err := dec.Decode(&h); err != nil {
		return Listing{}, fmt.Errorf("listing header: %w", err)
	}
	l := Listing{Roots: h.Roots, Report: h.Report, PinMarkers: h.PinMarkers, Metadata: h.Metadata, StartedAt: h.StartedAt}
	switch h.Format {
	case "":
		if len(h.StateFiles) > 0 {
			if err := json.Unmarshal(h.StateFiles, &l.StateFiles); err != nil {
				return Listing{}, fmt.Errorf("listing state files: %w", err)
			}
		}
	case ListingFormat:
		if h.StateFiles != nil || h.Metadata != nil || h.StateFileLines < 0 || h.MetadataLines < 0 {
			return Listing{}, fmt.Errorf("listing header of format %s holds entries or negative counts", ListingFormat)
		}
		// Decoding gives every string its own copy. A job's files come one
		// after another, so its dir and kind are shared with the file
		// before; a referenced file is shared with the state file of that
		// path. At a million files that is a third of the listing's heap.
		l.StateFiles = make([]StateFile, h.StateFileLines)
		paths := make(map[string]string, h.StateFileLines)
		for i := range l.StateFiles {
			f := &l.StateFiles[i]
			if err := dec.Decode(f); err != nil {
				return Listing{}, fmt.Errorf("listing state file %d of %d: %w", i+1, h.StateFileLines, err)
			}
			if i > 0 {
				prev := &l.StateFiles[i-1]
				if f.JobDir == prev.JobDir {
					f.JobDir = prev.JobDir
				}
				if f.Kind == prev.Kind {
					f.Kind = prev.Kind
				}
			}
			paths[f.Path] = f.Path
		}
		l.Metadata = make(map[string]MetadataResult, h.MetadataLines)
		for i := range h.MetadataLines {
			var m metadataLine
			if err := dec.Decode(&m); err != nil {
				return Listing{}, fmt.Errorf("listing _metadata %d of %d: %w", i+1, h.MetadataLines, err)
			}
			if _, dup := l.Metadata[m.Path]; dup || m.Path == "" {
				return Listing{}, fmt.Errorf("listing _metadata %d of %d: path %q empty or listed twice", i+1, h.MetadataLines, m.Path)
			}
			if m.Result.Refs != nil {
				for j, f := range m.Result.Refs.Files {
					if same, ok := paths[f]; ok {
						m.Result.Refs.Files[j] = same
					}
				}
			}
			l.Metadata[m.Path] = m.Result
		}
	default:
		return Listing{}, fmt.Errorf("listing format %q: this version reads %q", h.Format, ListingFormat)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Listing{}, fmt.Errorf("listing goes on after its last entry (%v)", err)
	}
	return l, nil
}
