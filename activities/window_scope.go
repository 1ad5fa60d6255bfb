package activities

import (
	"fmt"
	"sort"
	"strings"

	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
)

// maxNamesListed bounds the names a scope problem lists as what exists.
const maxNamesListed = 20

// liveJobNames are the names of the jobs that are not globally terminal:
// the jobs a scope's patterns select from.
func liveJobNames(jobs []flink.JobOverview) []string {
	var out []string
	for _, j := range jobs {
		if !j.State.IsGloballyTerminal() {
			out = append(out, j.Name)
		}
	}
	return out
}

// unresolvedScope names every entry of the scope that selects nothing, each
// with what the inventory has instead:
//
//   - a tenant the inventory lacks, one without a Flink cluster, or one
//     none of whose clusters scope.clusters names;
//   - a cluster the inventory lacks, or one of a tenant scope.tenants
//     leaves out;
//   - an includeJobs pattern that no live job on the clusters in scope
//     (running is their names) matches.
//
// An excludeJobs pattern that matches nothing is no problem: excluding is
// always safe.
func unresolvedScope(inv inventory.Inventory, s Scope, running []string) []string {
	tenantClusters := map[string][]string{}
	clusterTenant := map[string]string{}
	var clusters []string
	for _, c := range inv.Clusters {
		tenantClusters[c.Tenant] = append(tenantClusters[c.Tenant], c.ClusterID)
		clusterTenant[c.ClusterID] = c.Tenant
		clusters = append(clusters, c.ClusterID)
	}
	known := map[string]bool{}
	var tenants []string
	for _, t := range inv.Tenants {
		known[t.Name] = true
		tenants = append(tenants, t.Name)
	}
	for t := range tenantClusters {
		if !known[t] {
			known[t] = true
			tenants = append(tenants, t)
		}
	}
	var out []string
	for _, n := range s.Tenants {
		own := tenantClusters[n]
		switch {
		case !known[n]:
			out = append(out, fmt.Sprintf("tenant %q is not in the inventory; its tenants are %s", n, nameList(tenants)))
		case len(own) == 0:
			out = append(out, fmt.Sprintf("tenant %q has no Flink cluster in the inventory", n))
		case !anyInScope(s.Clusters, own):
			out = append(out, fmt.Sprintf("tenant %q has none of its clusters (%s) among scope.clusters", n, nameList(own)))
		}
	}
	for _, c := range s.Clusters {
		t, ok := clusterTenant[c]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("cluster %q is not in the inventory; its clusters are %s", c, nameList(clusters)))
		case !InScope(s.Tenants, t):
			out = append(out, fmt.Sprintf("cluster %q belongs to tenant %q, which scope.tenants leaves out", c, t))
		}
	}
	for _, p := range s.IncludeJobs {
		matched := false
		for _, name := range running {
			matched = matched || matchesAny([]string{p}, name)
		}
		if matched {
			continue
		}
		if len(running) == 0 {
			out = append(out, fmt.Sprintf("scope.includeJobs pattern %q matches no job: no job runs on the clusters in scope", p))
			continue
		}
		out = append(out, fmt.Sprintf("scope.includeJobs pattern %q matches no job running on the clusters in scope; they run %s", p, nameList(running)))
	}
	return out
}

func anyInScope(list, values []string) bool {
	for _, v := range values {
		if InScope(list, v) {
			return true
		}
	}
	return false
}

// nameList is the sorted, distinct names, at most maxNamesListed of them.
func nameList(names []string) string {
	seen := map[string]bool{}
	var uniq []string
	for _, n := range names {
		if !seen[n] {
			seen[n] = true
			uniq = append(uniq, n)
		}
	}
	if len(uniq) == 0 {
		return "none"
	}
	sort.Strings(uniq)
	if len(uniq) > maxNamesListed {
		return strings.Join(uniq[:maxNamesListed], ", ") + fmt.Sprintf(" and %d more", len(uniq)-maxNamesListed)
	}
	return strings.Join(uniq, ", ")
}
