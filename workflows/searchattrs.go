package workflows

import "go.temporal.io/sdk/temporal"

// Custom search attributes: operators filter and sort runs by them in the
// Temporal UI. The dev server script registers them; production namespaces
// need `temporal operator search-attribute create` with the same names/types.
var (
	SearchAttrKind              = temporal.NewSearchAttributeKeyKeyword("FlinkmaintKind")
	SearchAttrPhase             = temporal.NewSearchAttributeKeyKeyword("FlinkmaintPhase")
	SearchAttrTenants           = temporal.NewSearchAttributeKeyKeywordList("FlinkmaintTenants")
	SearchAttrJobsTotal         = temporal.NewSearchAttributeKeyInt64("FlinkmaintJobsTotal")
	SearchAttrJobsDone          = temporal.NewSearchAttributeKeyInt64("FlinkmaintJobsDone")
	SearchAttrJobsFailed        = temporal.NewSearchAttributeKeyInt64("FlinkmaintJobsFailed")
	SearchAttrPausedForDecision = temporal.NewSearchAttributeKeyBool("FlinkmaintPausedForDecision")
)

// Values of SearchAttrKind.
const (
	KindPing = "ping"
)

// SearchAttributeDefinitions returns every custom search attribute with a
// zero value, in a form that registers them (dev server, operator tooling).
func SearchAttributeDefinitions() temporal.SearchAttributes {
	return temporal.NewSearchAttributes(
		SearchAttrKind.ValueSet(""),
		SearchAttrPhase.ValueSet(""),
		SearchAttrTenants.ValueSet(nil),
		SearchAttrJobsTotal.ValueSet(0),
		SearchAttrJobsDone.ValueSet(0),
		SearchAttrJobsFailed.ValueSet(0),
		SearchAttrPausedForDecision.ValueSet(false),
	)
}
