package cleanup

import "github.com/flinkmaint/flinkmaint/internal/layout"

// markRelocatable marks the savepoints planned whose _metadata names every
// file relative to its own dir: their restore hint says a job can restore
// from the trash path (restoreHint). A savepoint without parsed references
// is not marked: nothing proves it relative.
func (p *planner) markRelocatable() {
	for _, c := range p.cands {
		if c.item.Kind != KindSavepointDir {
			continue
		}
		if m := p.meta[c.item.Path+"/"+layout.MetadataFileName]; m.Refs != nil && m.Refs.Relocatable {
			c.item.Relocatable = true
		}
	}
}
