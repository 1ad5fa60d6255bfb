package catalog

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/flinkmaint/flinkmaint/internal/inventory"
)

func TestRecipeRecordResolvesAgainstTheInventory(t *testing.T) {
	v1 := inventory.RestartRecipe{Kind: inventory.RestartRESTJarRun, Jar: "/v1.jar", EntryClass: "C", ProgramArgs: []string{}}
	v2 := v1
	v2.Jar, v2.ProgramArgs = "/v2.jar", []string{"--x"}
	v3 := v1
	v3.Jar = "/v3.jar"
	r := RecipeRecord{Base: v1, Recipe: v2}
	noArgs := v1
	noArgs.ProgramArgs = nil
	for name, tc := range map[string]struct {
		inv  inventory.RestartRecipe
		want Resolution
	}{
		"inventory still holds the replaced recipe": {v1, UseRecorded},
		"nil and empty arguments are the same":      {noArgs, UseRecorded},
		"inventory caught up":                       {v2, UseInventory},
		"inventory changed to a third recipe":       {v3, Conflict},
	} {
		if got := r.Resolve(tc.inv); got != tc.want {
			t.Errorf("%s: %v; want %v", name, got, tc.want)
		}
	}
}

func TestRecipeStorePutReplacesListsAndRemoves(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	rs := RecipeStore(s)
	orders := LogicalJob{Tenant: "a", Cluster: "c1", Job: "orders"}
	for _, id := range []string{"u1", "u2"} {
		if err := rs.Put(ctx, RecipeRecord{Job: orders, UpgradeID: id, Recipe: inventory.RestartRecipe{Jar: "/" + id + ".jar"}, At: time.Unix(1, 0)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := rs.Put(ctx, RecipeRecord{Job: LogicalJob{Tenant: "a", Cluster: "c1"}, UpgradeID: "u3"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("record without a job: %v; want ErrInvalid", err)
	}
	list, err := rs.List(ctx)
	if err != nil || len(list) != 1 || list[0].UpgradeID != "u2" || list[0].Recipe.Jar != "/u2.jar" {
		t.Fatalf("list %+v %v; want the latest record of orders only", list, err)
	}
	if err := rs.Remove(ctx, orders); err != nil {
		t.Fatal(err)
	}
	if err := rs.Remove(ctx, orders); err != nil {
		t.Fatalf("second remove: %v; want a missing record to be fine", err)
	}
	if list, err = rs.List(ctx); err != nil || len(list) != 0 {
		t.Fatalf("after remove %+v %v; want none", list, err)
	}
	if err := os.WriteFile(filepath.Join(s.Root, RecipeDir, "broken.json"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := rs.List(ctx); !errors.Is(err, ErrInvalid) {
		t.Fatalf("list with a corrupt record: %v; want ErrInvalid", err)
	}
}
