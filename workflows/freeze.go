package workflows

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/flinkmaint/flinkmaint/activities/oncall"
)

// FreezeOverride starts a run inside a freeze; who and why are recorded
// in its report.
type FreezeOverride struct {
	By     string `json:"by"`
	Reason string `json:"reason"`
}

// validate names what an override lacks.
func (o *FreezeOverride) validate(field string) error {
	if o != nil && (strings.TrimSpace(o.By) == "" || strings.TrimSpace(o.Reason) == "") {
		return fmt.Errorf("%s needs by and reason: both are recorded in the report", field)
	}
	return nil
}

// ErrTypeFrozen ends a run a freeze keeps from starting.
const ErrTypeFrozen = "Frozen"

// freezeChange marks the runs that consult the freeze calendar.
const freezeChange = "freeze"

// scheduledBy is the search attribute Temporal sets on runs a schedule
// starts.
var scheduledBy = temporal.NewSearchAttributeKeyKeyword("TemporalScheduledById")

// checkFreeze asks the worker's freeze calendar about tenants (none: any
// tenant) before a run changes anything. Outside a freeze it returns
// nothing. Inside one, an override lets the run go on (note says so); a
// run a schedule started is skipped (skip, note), since the schedule
// comes back; any other run is refused with an error naming the freeze,
// its end and how to override it.
func checkFreeze(ctx workflow.Context, what string, tenants []string, override *FreezeOverride, overrideHint string) (skip bool, note string, err error) {
	if workflow.GetVersion(ctx, freezeChange, workflow.DefaultVersion, 1) < 1 {
		return false, "", nil
	}
	var a *oncall.Activities
	var res oncall.CheckFreezeResult
	if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, shortActivityOptions()), a.CheckFreeze,
		oncall.CheckFreezeInput{Tenants: tenants}).Get(ctx, &res); err != nil {
		return false, "", fmt.Errorf("freeze calendar: %w", err)
	}
	if len(res.Active) == 0 {
		return false, "", nil
	}
	var names []string
	for _, f := range res.Active {
		names = append(names, f.String())
	}
	frozen := strings.Join(names, "; ")
	switch {
	case override != nil:
		return false, fmt.Sprintf("started inside %s: freeze overridden by %s: %s", frozen, override.By, override.Reason), nil
	case isScheduled(ctx):
		return true, fmt.Sprintf("%s skipped: scheduled inside %s; the schedule runs it again after", what, frozen), nil
	}
	return false, "", temporal.NewNonRetryableApplicationError(fmt.Sprintf("%s not started: inside %s. Start it after %s, or override the freeze: %s",
		what, frozen, res.Active[0].Until.UTC().Format(time.RFC3339), overrideHint), ErrTypeFrozen, nil)
}

func isScheduled(ctx workflow.Context) bool {
	id, ok := workflow.GetTypedSearchAttributes(ctx).GetKeyword(scheduledBy)
	return ok && id != ""
}

// isFrozen says err is a freeze refusal.
func isFrozen(err error) bool {
	var appErr *temporal.ApplicationError
	return errors.As(err, &appErr) && appErr.Type() == ErrTypeFrozen
}
