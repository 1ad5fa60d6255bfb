package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/flinkmaint/flinkmaint/internal/duration"
	"github.com/flinkmaint/flinkmaint/internal/temporalconn"
	"github.com/flinkmaint/flinkmaint/workflows"
)

// scheduleAction is what a kind of schedule starts: its flags and the
// workflow they build.
type scheduleAction interface {
	bind(cmd *cobra.Command)
	// build returns the workflow type, its input and the SearchAttrKind;
	// problems are usage errors naming the flag.
	build(name string) (workflowType string, input interface{}, kind string, err error)
	// workflowTypes are the workflows its schedules may start: a command
	// acts only on schedules of its own kind.
	workflowTypes() []string
}

// newScheduleGroup is the schedule command group of one kind of action.
func newScheduleGroup(g *globals, short string, newAction func() scheduleAction) *cobra.Command {
	cmd := newGroupCommand("schedule", short)
	kinds := newAction().workflowTypes()
	cmd.AddCommand(
		scheduleUpsertCommand(g, "create", newAction()),
		scheduleUpsertCommand(g, "update", newAction()),
		scheduleDescribeCommand(g, kinds),
		schedulePauseCommand(g, kinds),
		scheduleUnpauseCommand(g, kinds),
		scheduleDeleteCommand(g, kinds),
		scheduleListCommand(g),
		scheduleTriggerCommand(g, kinds),
	)
	return cmd
}

// scheduleFlagsMemo is the memo of a schedule's action that records the
// flags it was made with, so that an update changes only the flags given.
const scheduleFlagsMemo = "flinkmaintScheduleFlags"

// recordedFlags are a schedule's flags, in the order given.
type recordedFlags struct {
	Flags [][2]string `json:"flags"`
}

// unrecordedFlags are not part of the action: paused and note set the
// schedule's state (an update applies them only when given), replace says
// how to update.
var unrecordedFlags = map[string]bool{"paused": true, "note": true, "replace": true}

// recordFlags lists the command's own flags that are set now.
func recordFlags(cmd *cobra.Command) string {
	var rec recordedFlags
	// VisitAll and Changed: the merged set of a command's own flags
	// shares their Flag values, not the record of which were set.
	cmd.NonInheritedFlags().VisitAll(func(f *pflag.Flag) {
		if !f.Changed || unrecordedFlags[f.Name] {
			return
		}
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			for _, v := range sv.GetSlice() {
				rec.Flags = append(rec.Flags, [2]string{f.Name, v})
			}
			return
		}
		rec.Flags = append(rec.Flags, [2]string{f.Name, f.Value.String()})
	})
	b, _ := json.Marshal(rec) // a struct of strings always marshals
	return string(b)
}

// replayFlags sets every recorded flag that was not given now: an update
// keeps what it does not change. A new --cron or --every replaces both.
func replayFlags(cmd *cobra.Command, rec recordedFlags) error {
	fl := cmd.Flags()
	given := map[string]bool{}
	fl.VisitAll(func(f *pflag.Flag) { given[f.Name] = f.Changed })
	newSpec := given["cron"] || given["every"]
	for _, kv := range rec.Flags {
		name, value := kv[0], kv[1]
		if given[name] || (newSpec && (name == "cron" || name == "every")) || fl.Lookup(name) == nil {
			continue
		}
		if err := fl.Set(name, value); err != nil {
			return fmt.Errorf("the schedule's recorded --%s=%q: %w", name, value, err)
		}
	}
	return nil
}

// actionFlags reads the flags a schedule's action recorded; ok is false
// for a schedule made without them (by another tool or an older release).
func actionFlags(a *client.ScheduleWorkflowAction) (recordedFlags, bool, error) {
	var rec recordedFlags
	v, found := a.Memo[scheduleFlagsMemo]
	if !found {
		return rec, false, nil
	}
	var text string
	switch x := v.(type) {
	case *commonpb.Payload:
		if err := temporalconn.DataConverter().FromPayload(x, &text); err != nil {
			return rec, false, fmt.Errorf("read the schedule's recorded flags: %w", err)
		}
	case string:
		text = x
	}
	if err := json.Unmarshal([]byte(text), &rec); err != nil {
		return rec, false, fmt.Errorf("read the schedule's recorded flags %q: %w", text, err)
	}
	return rec, true, nil
}

// describeOfKind describes a schedule and checks that it starts a
// workflow of the kinds the command manages.
func describeOfKind(ctx context.Context, c client.Client, cmd *cobra.Command, name string, kinds []string) (*client.ScheduleDescription, *client.ScheduleWorkflowAction, error) {
	desc, err := c.ScheduleClient().GetHandle(ctx, workflows.ScheduleID(name)).Describe(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("describe schedule %s: %w", name, scheduleNotFound(err, name))
	}
	action, ok := desc.Schedule.Action.(*client.ScheduleWorkflowAction)
	wf := ""
	if ok {
		wf, _ = action.Workflow.(string)
	}
	if !ok || !slices.Contains(kinds, wf) {
		return nil, nil, usageErrorf("schedule %s starts %q, not %s: `%s` manages only those; use the schedule group of its kind (flinkmaint governance|savepoints|drill schedule)",
			name, wf, strings.Join(kinds, " or "), cmd.Parent().CommandPath())
	}
	return desc, action, nil
}

// scheduleSpec holds the flags every schedule shares.
type scheduleSpec struct {
	cron     string
	timeZone string
	every    time.Duration
	paused   bool
	note     string
}

func (f *scheduleSpec) bind(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.cron, "cron", "", "cron expression in --time-zone, e.g. \"0 3 * * *\"")
	cmd.Flags().StringVar(&f.timeZone, "time-zone", "UTC", "IANA time zone of --cron, e.g. Europe/Berlin")
	durationFlag(cmd.Flags(), &f.every, "every", 0, "interval, e.g. 24h or 7d")
	cmd.Flags().BoolVar(&f.paused, "paused", false, "create the schedule paused; on update, pause (true) or unpause (false) it")
	cmd.Flags().StringVar(&f.note, "note", "", "note shown with the schedule")
}

// check names what is wrong with the name and the spec flags; needSpec
// requires --cron or --every (an update may keep the schedule's).
func (f *scheduleSpec) check(name string, needSpec bool) error {
	switch {
	case f.cron != "" && f.every != 0:
		return usageErrorf("--cron and --every are exclusive: give one")
	case f.cron != "":
		if len(strings.Fields(f.cron)) < 5 && !strings.HasPrefix(f.cron, "@") {
			return usageErrorf("--cron=%q is not a cron expression: use five fields such as \"0 3 * * *\" or @daily", f.cron)
		}
	case f.every < 0:
		return usageErrorf("--every=%s is not valid: use a positive duration such as 24h or 7d", f.every)
	case f.every == 0 && needSpec:
		return usageErrorf("give --cron \"0 3 * * *\" or --every 24h")
	}
	if f.timeZone == "" {
		f.timeZone = "UTC"
	}
	if _, err := time.LoadLocation(f.timeZone); err != nil || strings.EqualFold(f.timeZone, "local") {
		return usageErrorf("--time-zone=%q is not an IANA time zone: use a name such as UTC or Europe/Berlin", f.timeZone)
	}
	if strings.ContainsAny(name, "/ \t") || name == "" {
		return usageErrorf("schedule name %q: use letters, digits and dashes", name)
	}
	return nil
}

// build returns the schedule's spec and the action starting what act
// builds; problems are usage errors naming the flag and what is valid.
func (f *scheduleSpec) build(name, taskQueue string, act scheduleAction) (client.ScheduleSpec, *client.ScheduleWorkflowAction, error) {
	var spec client.ScheduleSpec
	if err := f.check(name, true); err != nil {
		return spec, nil, err
	}
	if f.cron != "" {
		spec.CronExpressions = []string{f.cron}
	} else {
		spec.Intervals = []client.ScheduleIntervalSpec{{Every: f.every}}
	}
	if f.timeZone != "UTC" {
		spec.TimeZoneName = f.timeZone
	}
	wf, in, kind, err := act.build(name)
	if err != nil {
		return spec, nil, err
	}
	return spec, &client.ScheduleWorkflowAction{ID: workflows.ScheduleID(name), TaskQueue: taskQueue, Workflow: wf, Args: []interface{}{in},
		TypedSearchAttributes: temporal.NewSearchAttributes(workflows.SearchAttrKind.ValueSet(kind)), StaticSummary: workflows.StartSummary(in)}, nil
}

func scheduleUpsertCommand(g *globals, verb string, what scheduleAction) *cobra.Command {
	f := &scheduleSpec{}
	var replace bool
	cmd := &cobra.Command{
		Use: verb + " NAME",
		Short: map[string]string{
			"create": "Create a schedule",
			"update": "Change the flags given of a schedule; the others keep their values",
		}[verb],
		Args: oneArg("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if verb == "create" {
				spec, act, err := f.build(name, g.taskQueue, what)
				if err != nil {
					return err
				}
				act.Memo = map[string]interface{}{scheduleFlagsMemo: recordFlags(cmd)}
				c, err := g.dial(cmd.Context())
				if err != nil {
					return err
				}
				defer c.Close()
				_, err = c.ScheduleClient().Create(cmd.Context(), client.ScheduleOptions{
					ID: workflows.ScheduleID(name), Spec: spec, Action: act, Overlap: enumspb.SCHEDULE_OVERLAP_POLICY_SKIP, Paused: f.paused, Note: f.note,
				})
				if err != nil {
					if errors.Is(err, temporal.ErrScheduleAlreadyRunning) {
						return fmt.Errorf("schedule %s already exists: use `%s update %s`: %w", name, cmd.Parent().CommandPath(), name, err)
					}
					return fmt.Errorf("create schedule %s: %w", name, err)
				}
				return printScheduleChange(g, cmd, verb, act, spec)
			}

			// What the flags given alone get wrong is said before dialing;
			// the action is checked once merged with the recorded flags.
			if err := f.check(name, replace); err != nil {
				return err
			}
			c, err := g.dial(cmd.Context())
			if err != nil {
				return err
			}
			defer c.Close()
			_, old, err := describeOfKind(cmd.Context(), c, cmd, name, what.workflowTypes())
			if err != nil {
				return err
			}
			rec, ok, err := actionFlags(old)
			switch {
			case err != nil:
				return err
			case !ok && !replace:
				return usageErrorf("schedule %s has no record of the flags it was made with (made by another tool or an older flinkmaint): give all its flags and --replace", name)
			case ok && !replace:
				if err := replayFlags(cmd, rec); err != nil {
					return err
				}
			}
			spec, act, err := f.build(name, g.taskQueue, what)
			if err != nil {
				return err
			}
			act.Memo = map[string]interface{}{scheduleFlagsMemo: recordFlags(cmd)}
			changed := cmd.Flags().Changed
			err = c.ScheduleClient().GetHandle(cmd.Context(), workflows.ScheduleID(name)).Update(cmd.Context(), client.ScheduleUpdateOptions{
				DoUpdate: func(in client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
					s := in.Description.Schedule
					s.Spec, s.Action = &spec, act
					if s.State == nil {
						s.State = &client.ScheduleState{}
					}
					if changed("paused") {
						s.State.Paused = f.paused
					}
					if changed("note") {
						s.State.Note = f.note
					}
					return &client.ScheduleUpdate{Schedule: &s}, nil
				},
			})
			if err != nil {
				return fmt.Errorf("update schedule %s: %w", name, scheduleNotFound(err, name))
			}
			return printScheduleChange(g, cmd, verb, act, spec)
		},
	}
	what.bind(cmd)
	f.bind(cmd)
	if verb == "update" {
		cmd.Flags().BoolVar(&replace, "replace", false, "replace the whole action: flags not given take their defaults")
	}
	return cmd
}

func printScheduleChange(g *globals, cmd *cobra.Command, verb string, act *client.ScheduleWorkflowAction, spec client.ScheduleSpec) error {
	if g.output == outputJSON {
		return printJSON(cmd.OutOrStdout(), map[string]string{"schedule": act.ID, "workflow": act.Workflow.(string), "result": verb + "d"})
	}
	fmt.Fprintf(cmd.OutOrStdout(), "schedule %s %sd: %s every %s\n", act.ID, verb, act.Workflow, specText(spec))
	return nil
}

// specText says when a schedule runs. The server keeps a cron expression
// as a calendar spec; it is written back as cron.
func specText(s client.ScheduleSpec) string {
	tz := ""
	if s.TimeZoneName != "" {
		tz = " (" + s.TimeZoneName + ")"
	}
	if len(s.CronExpressions) > 0 {
		return "cron " + strings.Join(s.CronExpressions, ", ") + tz
	}
	if len(s.Calendars) > 0 {
		crons := make([]string, len(s.Calendars))
		for i, c := range s.Calendars {
			crons[i] = strings.Join([]string{cronField(c.Minute, 0, 59), cronField(c.Hour, 0, 23), cronField(c.DayOfMonth, 1, 31),
				cronField(c.Month, 1, 12), cronField(c.DayOfWeek, 0, 6)}, " ")
		}
		return "cron " + strings.Join(crons, ", ") + tz
	}
	if len(s.Intervals) > 0 {
		return s.Intervals[0].Every.String()
	}
	if len(s.Calendars) > 0 {
		return fmt.Sprintf("%d calendar specs%s", len(s.Calendars), tz)
	}
	return "(no spec)"
}

// cronField writes a calendar field as cron does: *, 3, 1-5, 0-59/15.
func cronField(rs []client.ScheduleRange, lo, hi int) string {
	if len(rs) == 0 {
		return "*"
	}
	parts := make([]string, 0, len(rs))
	for _, r := range rs {
		end, step := max(r.End, r.Start), max(r.Step, 1)
		switch {
		case r.Start <= lo && end >= hi && step == 1:
			parts = append(parts, "*")
		case end == r.Start:
			parts = append(parts, fmt.Sprint(r.Start))
		case step == 1:
			parts = append(parts, fmt.Sprintf("%d-%d", r.Start, end))
		default:
			parts = append(parts, fmt.Sprintf("%d-%d/%d", r.Start, end, step))
		}
	}
	return strings.Join(parts, ",")
}

func scheduleNotFound(err error, name string) error {
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return fmt.Errorf("no schedule named %s (see `schedule list`): %w", name, err)
	}
	return err
}

// scheduleDescription is what `schedule describe` prints.
type scheduleDescription struct {
	Schedule   string      `json:"schedule"`
	Workflow   string      `json:"workflow"`
	Spec       string      `json:"spec"`
	Paused     bool        `json:"paused"`
	Note       string      `json:"note,omitempty"`
	Flags      [][2]string `json:"flags,omitempty"`
	NextRuns   []string    `json:"nextRuns,omitempty"`
	RecentRuns []string    `json:"recentRuns,omitempty"`
}

func scheduleDescribeCommand(g *globals, kinds []string) *cobra.Command {
	return &cobra.Command{
		Use:   "describe NAME",
		Short: "Show a schedule: what it starts with which flags, when, whether paused, its recent runs",
		Args:  oneArg("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.dial(cmd.Context())
			if err != nil {
				return err
			}
			defer c.Close()
			desc, action, err := describeOfKind(cmd.Context(), c, cmd, args[0], kinds)
			if err != nil {
				return err
			}
			d := scheduleDescription{Schedule: workflows.ScheduleID(args[0])}
			d.Workflow, _ = action.Workflow.(string)
			rec, _, _ := actionFlags(action)
			d.Flags = rec.Flags
			if desc.Schedule.Spec != nil {
				d.Spec = specText(*desc.Schedule.Spec)
			}
			if st := desc.Schedule.State; st != nil {
				d.Paused, d.Note = st.Paused, st.Note
			}
			for _, t := range desc.Info.NextActionTimes {
				d.NextRuns = append(d.NextRuns, t.UTC().Format(time.RFC3339))
			}
			for _, a := range desc.Info.RecentActions {
				if a.StartWorkflowResult != nil {
					d.RecentRuns = append(d.RecentRuns, a.StartWorkflowResult.WorkflowID)
				}
			}
			if g.output == outputJSON {
				return printJSON(cmd.OutOrStdout(), d)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintf(tw, "schedule\t%s\nworkflow\t%s\nspec\t%s\npaused\t%v\n", d.Schedule, d.Workflow, d.Spec, d.Paused)
			if d.Note != "" {
				fmt.Fprintf(tw, "note\t%s\n", d.Note)
			}
			for _, kv := range d.Flags {
				fmt.Fprintf(tw, "flag\t--%s=%s\n", kv[0], kv[1])
			}
			for _, t := range d.NextRuns {
				fmt.Fprintf(tw, "next run\t%s\n", t)
			}
			for _, r := range d.RecentRuns {
				fmt.Fprintf(tw, "recent run\t%s\n", r)
			}
			return tw.Flush()
		},
	}
}

// scheduleHandleCommand does one thing to a schedule of the command's
// kinds: verb is the command, done what it prints after.
func scheduleHandleCommand(g *globals, kinds []string, verb, done, short string, act func(ctx context.Context, h client.ScheduleHandle) error) *cobra.Command {
	return &cobra.Command{
		Use:   verb + " NAME",
		Short: short,
		Args:  oneArg("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.dial(cmd.Context())
			if err != nil {
				return err
			}
			defer c.Close()
			if _, _, err := describeOfKind(cmd.Context(), c, cmd, args[0], kinds); err != nil {
				return err
			}
			if err := act(cmd.Context(), c.ScheduleClient().GetHandle(cmd.Context(), workflows.ScheduleID(args[0]))); err != nil {
				return fmt.Errorf("%s schedule %s: %w", verb, args[0], scheduleNotFound(err, args[0]))
			}
			fmt.Fprintf(cmd.OutOrStdout(), "schedule %s %s\n", workflows.ScheduleID(args[0]), done)
			return nil
		},
	}
}

func schedulePauseCommand(g *globals, kinds []string) *cobra.Command {
	var note string
	cmd := scheduleHandleCommand(g, kinds, "pause", "paused", "Pause a schedule: it starts nothing until unpaused",
		func(ctx context.Context, h client.ScheduleHandle) error {
			return h.Pause(ctx, client.SchedulePauseOptions{Note: note})
		})
	cmd.Flags().StringVar(&note, "note", "", "why (shown with the schedule)")
	return cmd
}

func scheduleUnpauseCommand(g *globals, kinds []string) *cobra.Command {
	var note string
	cmd := scheduleHandleCommand(g, kinds, "unpause", "unpaused", "Let a paused schedule start runs again",
		func(ctx context.Context, h client.ScheduleHandle) error {
			return h.Unpause(ctx, client.ScheduleUnpauseOptions{Note: note})
		})
	cmd.Flags().StringVar(&note, "note", "", "why (shown with the schedule)")
	return cmd
}

func scheduleDeleteCommand(g *globals, kinds []string) *cobra.Command {
	return scheduleHandleCommand(g, kinds, "delete", "deleted", "Delete a schedule (runs already started go on)",
		func(ctx context.Context, h client.ScheduleHandle) error { return h.Delete(ctx) })
}

func scheduleTriggerCommand(g *globals, kinds []string) *cobra.Command {
	return scheduleHandleCommand(g, kinds, "trigger", "triggered", "Start a schedule's action now",
		func(ctx context.Context, h client.ScheduleHandle) error {
			return h.Trigger(ctx, client.ScheduleTriggerOptions{Overlap: enumspb.SCHEDULE_OVERLAP_POLICY_ALLOW_ALL})
		})
}

// scheduleRow is one line of `governance schedule list`.
type scheduleRow struct {
	Schedule   string   `json:"schedule"`
	Workflow   string   `json:"workflow"`
	Spec       string   `json:"spec"`
	Paused     bool     `json:"paused"`
	NextRun    string   `json:"nextRun,omitempty"`
	RecentRuns []string `json:"recentRuns,omitempty"`
}

func listSchedules(ctx context.Context, c client.Client) ([]scheduleRow, error) {
	iter, err := c.ScheduleClient().List(ctx, client.ScheduleListOptions{PageSize: 100})
	if err != nil {
		return nil, err
	}
	var rows []scheduleRow
	for iter.HasNext() {
		e, err := iter.Next()
		if err != nil {
			return nil, err
		}
		if !strings.HasPrefix(e.ID, "flinkmaint-") {
			continue
		}
		r := scheduleRow{Schedule: e.ID, Workflow: e.WorkflowType.Name, Paused: e.Paused}
		if e.Spec != nil {
			r.Spec = specText(*e.Spec)
		}
		if len(e.NextActionTimes) > 0 {
			r.NextRun = e.NextActionTimes[0].UTC().Format(time.RFC3339)
		}
		for _, a := range e.RecentActions {
			if a.StartWorkflowResult != nil {
				r.RecentRuns = append(r.RecentRuns, a.StartWorkflowResult.WorkflowID)
			}
		}
		rows = append(rows, r)
	}
	return rows, nil
}

func scheduleListCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List flinkmaint schedules",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.dial(cmd.Context())
			if err != nil {
				return err
			}
			defer c.Close()
			rows, err := listSchedules(cmd.Context(), c)
			if err != nil {
				return fmt.Errorf("list schedules: %w", err)
			}
			if g.output == outputJSON {
				return printJSON(cmd.OutOrStdout(), rows)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SCHEDULE\tWORKFLOW\tSPEC\tPAUSED\tNEXT RUN\tLAST RUN")
			for _, r := range rows {
				last := ""
				if n := len(r.RecentRuns); n > 0 {
					last = r.RecentRuns[n-1]
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%v\t%s\t%s\n", r.Schedule, r.Workflow, r.Spec, r.Paused, r.NextRun, last)
			}
			return tw.Flush()
		},
	}
}

// durationValue is a duration flag read by internal/duration, as window
// files and the worker's configuration are: 90m, 36h, 7d, 1d12h.
type durationValue struct{ d *time.Duration }

func (v durationValue) String() string {
	if v.d == nil {
		return "0s"
	}
	return v.d.String()
}

func (v durationValue) Set(s string) error {
	d, err := duration.Parse(s)
	if err != nil {
		return err
	}
	*v.d = d
	return nil
}

func (durationValue) Type() string { return "duration" }

// durationFlag binds a duration flag that takes days too.
func durationFlag(fl *pflag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	*p = value
	fl.Var(durationValue{p}, name, usage)
}
