package cleanup

import (
	"testing"
	"time"

	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/layout"
)

// TestATenantRootClaimsOnlyWhatLiesUnderIt: with roots and tenant roots
// spelled without a scheme (a listing of the default file system), a
// savepoint under another tenant's root that claims to be of this
// tenant's retired job proves nothing about it, by job id or by logical
// job: the job's latest checkpoint stays.
func TestATenantRootClaimsOnlyWhatLiesUnderIt(t *testing.T) {
	for name, evidence := range map[string]func(in *Input, sp string){
		"job id":      func(in *Input, sp string) { in.SavepointJobIDs = map[string]string{sp: jobA} },
		"logical job": func(in *Input, sp string) { in.JobLineage = map[string]string{jobA: "t/c/" + jobA[:6]} },
	} {
		t.Run(name, func(t *testing.T) {
			ck, sps := "/t/checkpoints", "/u/savepoints"
			dir := ck + "/" + jobA
			c := dir + "/chk-2"
			sp := sps + "/savepoint-" + jobA[:6] + "-0123456789ab"
			l := Listing{Roots: []layout.Root{{Path: ck, Kind: layout.CheckpointRoot}, {Path: sps, Kind: layout.SavepointRoot}},
				Metadata: map[string]MetadataResult{
					c + "/_metadata":  {Refs: &References{Metadata: c + "/_metadata", Dir: c}},
					sp + "/_metadata": {Refs: &References{Metadata: sp + "/_metadata", Dir: sp, Files: []string{sp + "/state"}}},
				}}
			l.Report.Jobs = []layout.JobCheckpoints{{Root: ck, Path: dir, JobID: jobA, Total: usage(3, old),
				Checkpoints: []layout.Checkpoint{{ID: 2, Path: c, Completed: true, Written: old, Usage: usage(2, old)}}}}
			l.Report.Savepoints = []layout.Savepoint{{Root: sps, Path: sp, JobIDPrefix: jobA[:6], Completed: true,
				Written: old.Add(time.Hour), Usage: usage(3, old.Add(time.Hour))}}
			in := Input{Now: now, Listing: l, Live: Live{Clusters: []LiveCluster{{ClusterID: "c1"}}}, Lineage: byPrefix(l),
				Tenants: []inventory.Tenant{{Name: "team-t", Root: "/t"}, {Name: "team-u", Root: "/u"}}}
			evidence(&in, sp)
			p, err := BuildPlan(in)
			if err != nil {
				t.Fatal(err)
			}
			if k, ok := keptFor(p, c); !ok || k.Reason != KeepLatestRetired || k.Tenant != "team-t" {
				t.Fatalf("%s kept %+v (planned %v); want %s in team-t", c, k, planned(p), KeepLatestRetired)
			}
			if k, _ := keptFor(p, sp); k.Tenant != "team-u" {
				t.Fatalf("%s kept %+v; want it in team-u", sp, k)
			}
		})
	}
}
