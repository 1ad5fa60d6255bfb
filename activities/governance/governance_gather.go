package governance

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"strings"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/internal/cleanup"
	"github.com/flinkmaint/flinkmaint/internal/layout"
)

// maxGatherParts bounds how many parts one plan's listing is gathered in.
const maxGatherParts = 64

// GatherCleanupInput gathers part Part (0-based) of Parts of the listing a
// plan of Scope is made from: the job dirs, savepoints and HA cluster dirs
// of the scope's roots whose names fall in that part (cleanup.GatherPart),
// with their state files and parsed _metadata. Parts run at once on
// several workers; PlanCleanup merges them.
type GatherCleanupInput struct {
	RunID string
	Scope core.Scope
	Part  int
	Parts int
}

// ListingPart is one gathered part, written to storage: PlanCleanup reads
// it back only if its hash matches.
type ListingPart struct {
	Path       string `json:"path"`
	SHA256     string `json:"sha256"`
	Part       int    `json:"part"`
	Parts      int    `json:"parts"`
	Roots      int    `json:"roots"`
	Jobs       int    `json:"jobs"`
	Savepoints int    `json:"savepoints"`
	StateFiles int    `json:"stateFiles"`
	Metadata   int    `json:"metadata"`
}

// GatherCleanup gathers one part of a plan's listing and writes it,
// gzipped JSON, beside the plan. It only reads the scope's roots; a retry
// gathers and writes the part again.
func (a *Activities) GatherCleanup(ctx context.Context, in GatherCleanupInput) (ListingPart, error) {
	if a.Inventory == nil || a.Storage == nil {
		return ListingPart{}, core.NonRetryable(core.ErrTypeInventory, "worker has no inventory source or storage configured")
	}
	if a.Cleanup.PlanDir == "" {
		return ListingPart{}, core.NonRetryable(core.ErrTypeCleanupNotConfigured, "worker config cleanup.planDir is empty: set a directory under storage.writableRoots for plans and reports")
	}
	if err := CheckRunID(in.RunID); err != nil {
		return ListingPart{}, core.NonRetryable(core.ErrTypeInvalidInput, "%v", err)
	}
	if in.Parts < 1 || in.Parts > maxGatherParts || in.Part < 0 || in.Part >= in.Parts {
		return ListingPart{}, core.NonRetryable(core.ErrTypeInvalidInput, "gather part %d of %d: want 1 to %d parts and a part from 0 to parts-1", in.Part, in.Parts, maxGatherParts)
	}
	inv, err := core.Discover(ctx, a.Inventory)
	if err != nil {
		return ListingPart{}, err
	}
	var notes []string
	fs, roots, _, err := a.scopeRoots(ctx, inv, in.Scope, &notes)
	if err != nil {
		return ListingPart{}, err
	}
	started := core.Now(a.Now)
	listing := cleanup.Listing{Roots: roots, Metadata: map[string]cleanup.MetadataResult{}}
	if len(roots) > 0 {
		err := core.HeartbeatWhile(ctx, core.PollInterval(a.PollInterval), fmt.Sprintf("gather part %d of %d", in.Part+1, in.Parts), func(ctx context.Context) error {
			var err error
			listing, err = cleanup.Gather(ctx, fs, roots, cleanup.GatherOptions{Part: cleanup.GatherPart(in.Part, in.Parts)})
			return err
		})
		if err != nil {
			return ListingPart{}, core.Classify("list the roots in scope", err)
		}
	}
	listing.StartedAt = started
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if err := cleanup.WriteListing(zw, listing); err != nil {
		return ListingPart{}, core.NonRetryable(core.ErrTypeInvalidInput, "encode listing: %v", err)
	}
	if err := zw.Close(); err != nil {
		return ListingPart{}, core.NonRetryable(core.ErrTypeInvalidInput, "compress listing: %v", err)
	}
	p := listingPartPath(a.Cleanup.PlanDir, in.RunID, in.Part, in.Parts)
	if _, err := (core.Documents{Storage: a.Storage}).WriteDocument(ctx, core.WriteDocumentInput{Path: p, Content: buf.Bytes()}); err != nil {
		return ListingPart{}, err
	}
	sum := sha256.Sum256(buf.Bytes())
	return ListingPart{Path: p, SHA256: hex.EncodeToString(sum[:]), Part: in.Part, Parts: in.Parts, Roots: len(roots),
		Jobs: len(listing.Report.Jobs), Savepoints: len(listing.Report.Savepoints), StateFiles: len(listing.StateFiles), Metadata: len(listing.Metadata)}, nil
}

func listingPartPath(planDir, runID string, part, parts int) string {
	return fmt.Sprintf("%s/%s/listing-%02d-of-%02d.json.gz", strings.TrimRight(planDir, "/"), runID, part+1, parts)
}

// loadListing reads the gathered parts back and merges them into the
// listing of roots. Every part must be there once, be the one gathered
// (hash) and cover exactly roots: a part gathered before the inventory
// changed fails the plan rather than leave a root half listed.
func (a *Activities) loadListing(ctx context.Context, runID string, parts []ListingPart, roots []layout.Root) (cleanup.Listing, error) {
	n := len(parts)
	if n > maxGatherParts {
		return cleanup.Listing{}, core.NonRetryable(core.ErrTypeInvalidInput, "%d listing parts: at most %d", n, maxGatherParts)
	}
	seen := make([]bool, n)
	listings := make([]cleanup.Listing, 0, n)
	for _, lp := range parts {
		if lp.Parts != n || lp.Part < 0 || lp.Part >= n || seen[lp.Part] || lp.Path != listingPartPath(a.Cleanup.PlanDir, runID, lp.Part, n) {
			return cleanup.Listing{}, core.NonRetryable(core.ErrTypeInvalidInput, "listing part %+v: want each of %d parts once, at %s", lp, n, listingPartPath(a.Cleanup.PlanDir, runID, lp.Part, n))
		}
		seen[lp.Part] = true
		fs, p, err := a.Storage.Resolve(ctx, lp.Path)
		if err != nil {
			return cleanup.Listing{}, core.Classify("resolve listing part "+lp.Path, err)
		}
		data, err := fs.ReadFile(ctx, p, maxPlanBytes)
		if err != nil {
			return cleanup.Listing{}, core.Classify("read listing part "+lp.Path, err)
		}
		sum := sha256.Sum256(data)
		if got := hex.EncodeToString(sum[:]); got != lp.SHA256 {
			return cleanup.Listing{}, core.NonRetryable(core.ErrTypeCleanupPlanChanged, "listing part %s has sha256 %s, the gathered one %s; plan again", lp.Path, got, lp.SHA256)
		}
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return cleanup.Listing{}, core.NonRetryable(core.ErrTypeCleanupPlanInvalid, "listing part %s: %v", lp.Path, err)
		}
		l, err := cleanup.ReadListing(io.LimitReader(zr, 8*maxPlanBytes))
		if err != nil {
			return cleanup.Listing{}, core.NonRetryable(core.ErrTypeCleanupPlanInvalid, "listing part %s does not decode: %v", lp.Path, err)
		}
		listings = append(listings, l)
	}
	l, err := cleanup.MergeListings(roots, listings...)
	if err != nil {
		return cleanup.Listing{}, core.NonRetryable(core.ErrTypeCleanupScopeChanged, "the roots in scope changed while the plan was gathered, or its parts overlap: %v; plan again", err)
	}
	return l, nil
}
