package cleanup

import "sort"

// TenantReclaim is what an executed plan reclaimed for one tenant.
type TenantReclaim struct {
	Tenant  string `json:"tenant"`
	Items   int64  `json:"items"`
	Files   int64  `json:"files"`
	Dirs    int64  `json:"dirs"`
	Bytes   int64  `json:"bytes"`
	Objects int64  `json:"objects,omitempty"`
}

// OutcomeCount counts items that ended one way.
type OutcomeCount struct {
	Outcome string `json:"outcome"`
	Items   int    `json:"items"`
}

// Tally is an executed plan's outcome as its audit manifest records it.
type Tally struct {
	// Reclaimed sums what was trashed or deleted; Objects are Kubernetes
	// objects among Items.
	Reclaimed TenantReclaim
	Tenants   []TenantReclaim // by tenant name
	Outcomes  []OutcomeCount  // by outcome
	// Unfinished are the refused and failed records, in manifest order.
	Unfinished []Record
	// Last is the last record of each planned item.
	Last map[string]Record
}

// TallyManifest counts the manifest records of the plan's items (a
// manifest may hold records of another attempt's plan; they are ignored).
func TallyManifest(plan Plan, recs []Record) Tally {
	tenantOf := map[string]string{}
	for _, it := range plan.Delete {
		tenantOf[it.Path] = it.Tenant
	}
	for _, it := range plan.Objects {
		tenantOf[it.Path] = it.Tenant
	}
	t := Tally{Last: map[string]Record{}}
	byTenant := map[string]*TenantReclaim{}
	counts := map[string]int{}
	for _, r := range recs {
		tenant, ok := tenantOf[r.Path]
		if !ok {
			continue
		}
		counts[string(r.Outcome)]++
		t.Last[r.Path] = r
		switch r.Outcome {
		case OutcomeTrashed, OutcomeDeleted:
			tr := byTenant[tenant]
			if tr == nil {
				tr = &TenantReclaim{Tenant: tenant}
				byTenant[tenant] = tr
			}
			for _, sum := range []*TenantReclaim{tr, &t.Reclaimed} {
				sum.Items++
				if IsObjectPath(r.Path) {
					sum.Objects++
					continue
				}
				sum.Files += r.Files
				sum.Dirs += r.Dirs
				sum.Bytes += r.Bytes
			}
		case OutcomeRefused, OutcomeFailed:
			t.Unfinished = append(t.Unfinished, r)
		}
	}
	for o, n := range counts {
		t.Outcomes = append(t.Outcomes, OutcomeCount{Outcome: o, Items: n})
	}
	sort.Slice(t.Outcomes, func(i, j int) bool { return t.Outcomes[i].Outcome < t.Outcomes[j].Outcome })
	for _, tr := range byTenant {
		t.Tenants = append(t.Tenants, *tr)
	}
	sort.Slice(t.Tenants, func(i, j int) bool { return t.Tenants[i].Tenant < t.Tenants[j].Tenant })
	return t
}

// Merge adds the counts of o, the tally of another part of the same run
// (disjoint items), to t. Last and Unfinished are not merged: a run's
// whole sets would grow with its size; callers keep the samples they need.
func (t *Tally) Merge(o Tally) {
	add := func(dst *TenantReclaim, src TenantReclaim) {
		dst.Items += src.Items
		dst.Files += src.Files
		dst.Dirs += src.Dirs
		dst.Bytes += src.Bytes
		dst.Objects += src.Objects
	}
	add(&t.Reclaimed, o.Reclaimed)
	for _, ot := range o.Tenants {
		i := sort.Search(len(t.Tenants), func(i int) bool { return t.Tenants[i].Tenant >= ot.Tenant })
		if i == len(t.Tenants) || t.Tenants[i].Tenant != ot.Tenant {
			t.Tenants = append(t.Tenants[:i], append([]TenantReclaim{{Tenant: ot.Tenant}}, t.Tenants[i:]...)...)
		}
		add(&t.Tenants[i], ot)
	}
	for _, oc := range o.Outcomes {
		i := sort.Search(len(t.Outcomes), func(i int) bool { return t.Outcomes[i].Outcome >= oc.Outcome })
		if i == len(t.Outcomes) || t.Outcomes[i].Outcome != oc.Outcome {
			t.Outcomes = append(t.Outcomes[:i], append([]OutcomeCount{{Outcome: oc.Outcome}}, t.Outcomes[i:]...)...)
		}
		t.Outcomes[i].Items += oc.Items
	}
}
