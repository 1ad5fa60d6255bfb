package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/storage"
)

// RecipeDir holds the recipe of record of every job an upgrade committed,
// one file per job, beside the savepoint catalog.
const RecipeDir = ".flinkmaint/recipes"

// RecipeRecord is the restart recipe of a job after a committed upgrade.
// Base is the inventory's recipe the upgrade replaced: while the inventory
// still says Base, Recipe is how the job restarts; once the inventory says
// Recipe, the record is redundant; any other inventory recipe means the
// two disagree, and the job is left alone until someone decides.
type RecipeRecord struct {
	Job       LogicalJob              `json:"job"`
	Base      inventory.RestartRecipe `json:"base"`
	Recipe    inventory.RestartRecipe `json:"recipe"`
	UpgradeID string                  `json:"upgradeId"`
	At        time.Time               `json:"at"`
	// Previous is the record this one replaced, restored when its upgrade
	// rolls back (itself without a Previous: one step back is kept).
	Previous *RecipeRecord `json:"previous,omitempty"`
}

// Resolution is what a recipe record makes of the inventory's recipe.
type Resolution int

// Resolutions.
const (
	// UseInventory: no record, or the inventory already holds the recipe.
	UseInventory Resolution = iota
	// UseRecorded: the inventory still holds the recipe the upgrade
	// replaced; the job restarts with the recorded one.
	UseRecorded
	// Conflict: the inventory holds neither.
	Conflict
)

// Resolve says which recipe a job restarts with.
func (r RecipeRecord) Resolve(inv inventory.RestartRecipe) Resolution {
	switch {
	case SameRecipe(inv, r.Recipe):
		return UseInventory
	case SameRecipe(inv, r.Base):
		return UseRecorded
	default:
		return Conflict
	}
}

// SameRecipe says two recipes start the same job the same way.
func SameRecipe(a, b inventory.RestartRecipe) bool {
	return reflect.DeepEqual(normal(a), normal(b))
}

// normal makes nil and empty argument lists and configurations compare
// equal.
func normal(r inventory.RestartRecipe) inventory.RestartRecipe {
	if len(r.ProgramArgs) == 0 {
		r.ProgramArgs = nil
	}
	if len(r.FlinkConfiguration) == 0 {
		r.FlinkConfiguration = nil
	}
	return r
}

// RecipeStore keeps recipe records under Root/.flinkmaint/recipes on FS.
type RecipeStore struct {
	FS   storage.FileSystem
	Root string
}

func (s RecipeStore) dir() string { return strings.TrimRight(s.Root, "/") + "/" + RecipeDir }

// Put records r as its job's recipe, replacing an older record.
func (s RecipeStore) Put(ctx context.Context, r RecipeRecord) error {
	if r.Job.Cluster == "" || r.Job.Job == "" || r.UpgradeID == "" {
		return fmt.Errorf("%w: recipe record of %s by upgrade %q: job and upgrade are required", ErrInvalid, r.Job, r.UpgradeID)
	}
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return replaceFile(ctx, s.FS, s.dir(), entryName(r.Job.Cluster+"/"+r.Job.Job), data)
}

// Remove drops the record of job; a missing one is fine.
func (s RecipeStore) Remove(ctx context.Context, job LogicalJob) error {
	err := s.FS.Remove(ctx, s.dir()+"/"+entryName(job.Cluster+"/"+job.Job))
	if errors.Is(err, storage.ErrNotFound) {
		return nil
	}
	return err
}

// List reads every record, sorted by job; a missing directory is empty.
func (s RecipeStore) List(ctx context.Context) ([]RecipeRecord, error) {
	out, err := readRecords[RecipeRecord](ctx, s.FS, s.dir())
	sort.Slice(out, func(i, j int) bool { return out[i].Job.String() < out[j].Job.String() })
	return out, err
}
