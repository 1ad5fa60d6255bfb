package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/user"
	"reflect"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/flinkmaint/flinkmaint/internal/catalog"
	"github.com/flinkmaint/flinkmaint/workflows"
)

func newWindowCommand(g *globals) *cobra.Command {
	cmd := newGroupCommand("window", "Plan, run and steer maintenance windows")
	cmd.AddCommand(
		windowStartCommand(g),
		windowPlanCommand(g),
		withWatch(g, windowStatusCommand(g), func(a []string) string { return workflows.WindowWorkflowID(a[0]) },
			func(a []string) string { return workflows.WindowCleanupWorkflowID(a[0]) }),
		runListCommand(g, workflows.KindWindow, "maintenance windows", "window-"),
		windowReportCommand(g),
		windowSignalCommand(g, "pause", "Pause at the next safe point (running steps finish)", workflows.SignalPause),
		windowSignalCommand(g, "resume", "Lift an operator pause", workflows.SignalResume),
		windowUpdateCommand(g, "confirm-network-change", "Tell a waiting window the infrastructure change is done"),
		windowUpdateCommand(g, "decide", "Answer the decision a paused window waits for"),
		windowUpdateCommand(g, "abort", "End a window at its next safe point; stopped jobs stay stopped"),
	)
	return cmd
}

// loadStrictYAML reads a YAML file into out through its JSON form, so the
// workflow types' JSON names and duration parsing apply, rejecting
// unknown keys so a typo never silently falls back to a default. Errors
// are usage errors naming the file.
func loadStrictYAML(what, path string, out interface{}) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return usageErrorf("%s file: %v", what, err)
	}
	var generic interface{}
	if err := yaml.Unmarshal(data, &generic); err != nil {
		return usageErrorf("%s file %s: %v", what, path, err)
	}
	if _, ok := generic.(map[string]interface{}); !ok {
		return usageErrorf("%s file %s: want keys such as those of deploy/examples/%s.yaml, not %s", what, path, what, yamlShape(generic))
	}
	// Every unknown key and every value its type refuses at once, with its
	// path: a typo never falls back to a default silently, and json's own
	// error for a bad duration names no key.
	unknown, bad := checkKeys(generic, reflect.TypeOf(out).Elem(), "")
	if len(unknown) > 0 {
		ref := "deploy/examples/" + what + ".yaml"
		if what == "window" {
			ref = "docs/window-file.md or " + ref
		}
		bad = append([]string{fmt.Sprintf("unknown keys (see %s): %s", ref, strings.Join(unknown, ", "))}, bad...)
	}
	switch len(bad) {
	case 0:
	case 1:
		return usageErrorf("%s file %s: %s", what, path, bad[0])
	default:
		return usageErrorf("%s file %s:\n  - %s", what, path, strings.Join(bad, "\n  - "))
	}
	js, err := json.Marshal(generic)
	if err != nil {
		return usageErrorf("%s file %s: %v", what, path, err)
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			got := map[string]string{"string": "a text value", "number": "a number", "bool": "true or false", "array": "a list", "object": "keys"}[te.Value]
			if got == "" {
				got = te.Value
			}
			return usageErrorf("%s file %s: %s is %s; want %s", what, path, te.Field, got, jsonTypeWord(te.Type))
		}
		return usageErrorf("%s file %s: %v", what, path, err)
	}
	return nil
}

var jsonUnmarshaler = reflect.TypeOf((*json.Unmarshaler)(nil)).Elem()

// checkKeys walks a decoded YAML value beside the type t it decodes into
// (by its JSON form) and lists, with their paths, the keys t does not
// take and the values whose own decoder refuses them (a duration such as
// "14x"), each as "path: why".
func checkKeys(v interface{}, t reflect.Type, path string) (unknown, bad []string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if v != nil && reflect.PointerTo(t).Implements(jsonUnmarshaler) {
		js, err := json.Marshal(v)
		if err == nil {
			err = reflect.New(t).Interface().(json.Unmarshaler).UnmarshalJSON(js)
		}
		if err != nil {
			bad = append(bad, fmt.Sprintf("%s: %v", path, err))
		}
		return nil, bad
	}
	add := func(u, b []string) {
		unknown, bad = append(unknown, u...), append(bad, b...)
	}
	switch x := v.(type) {
	case map[string]interface{}:
		var fields map[string]reflect.Type
		switch t.Kind() {
		case reflect.Map:
		case reflect.Struct:
			fields = jsonFields(t)
		default:
			return nil, nil
		}
		for _, k := range slices.Sorted(maps.Keys(x)) {
			et := t
			if fields == nil {
				et = t.Elem()
			} else if ft, ok := fields[k]; ok {
				et = ft
			} else {
				unknown = append(unknown, join(path, k))
				continue
			}
			add(checkKeys(x[k], et, join(path, k)))
		}
		sort.Strings(unknown)
	case []interface{}:
		if t.Kind() != reflect.Slice && t.Kind() != reflect.Array {
			return nil, nil
		}
		for i, e := range x {
			add(checkKeys(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i)))
		}
	}
	return unknown, bad
}

// jsonFields maps the JSON names of a struct's fields (embedded ones
// included) to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-" || (!f.IsExported() && !f.Anonymous):
		case f.Anonymous && name == "":
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for k, v := range jsonFields(ft) {
					out[k] = v
				}
			}
		case name == "":
			out[f.Name] = f.Type
		default:
			out[name] = f.Type
		}
	}
	return out
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func yamlShape(v interface{}) string {
	switch v.(type) {
	case nil:
		return "an empty file"
	case []interface{}:
		return "a list"
	}
	s := fmt.Sprint(v)
	if len(s) > 40 {
		s = s[:40] + "..."
	}
	return fmt.Sprintf("a single value (%q)", s)
}

// jsonTypeWord names what a field takes, in the user's words.
func jsonTypeWord(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a text value"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "keys"
	}
	return "a " + t.String()
}

// windowFileInternalKeys are the fields of WindowInput a window file may
// not set, and why; docs/window-file.md lists them apart.
var windowFileInternalKeys = map[string]string{
	"resume":         "the state a window hands to its next run, written by the window itself",
	"overrideFreeze": "set by `window start --override-freeze --reason`, which records who overrode the freeze",
}

// loadWindowFile reads window.yaml into the workflow input.
func loadWindowFile(path string) (workflows.WindowInput, error) {
	var in workflows.WindowInput
	if err := loadStrictYAML("window", path, &in); err != nil {
		return workflows.WindowInput{}, err
	}
	for key, why := range windowFileInternalKeys {
		if (key == "resume" && in.Resume != nil) || (key == "overrideFreeze" && in.OverrideFreeze != nil) {
			return workflows.WindowInput{}, usageErrorf("window file %s: %s is not a key of the file (%s): remove it", path, key, why)
		}
	}
	in.Policy.ApplyDefaults()
	if err := in.Validate(); err != nil {
		return workflows.WindowInput{}, usageErrorf("window file %s:\n%v", path, err)
	}
	return in, nil
}

func windowStartCommand(g *globals) *cobra.Command {
	var file, reason string
	var wait, overrideFreeze bool
	cmd := &cobra.Command{
		Use:   "start -f window.yaml",
		Short: "Start a maintenance window from a window file",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if file == "" {
				return usageErrorf("-f window.yaml is required")
			}
			in, err := loadWindowFile(file)
			if err != nil {
				return err
			}
			if in.OverrideFreeze, err = freezeOverride(overrideFreeze, reason, "this window may stop jobs"); err != nil {
				return err
			}
			c, err := g.dial(cmd.Context())
			if err != nil {
				return err
			}
			defer c.Close()
			run, err := g.startOnce(cmd.Context(), c, "window", in.WindowID, workflows.WindowWorkflowID(in.WindowID), workflows.KindWindow,
				map[string]interface{}{"reason": in.Reason, "ticket": in.Ticket}, workflows.MaintenanceWindowWorkflowType, in)
			if err != nil {
				return err
			}
			out := map[string]string{"windowId": in.WindowID, "workflowId": run.GetID(), "runId": run.GetRunID(), "url": g.conn.ExecutionURL(run.GetID(), run.GetRunID())}
			if g.output == outputJSON {
				if err := printJSON(cmd.OutOrStdout(), out); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(cmd.OutOrStdout(), "window %s started\nui  %s\n", in.WindowID, out["url"])
			}
			if !wait {
				return nil
			}
			var rep workflows.WindowReport
			if err := run.Get(cmd.Context(), &rep); err != nil {
				if msg, refused := refusal(err); refused {
					return usageErrorf("window %s refused its input, nothing was stopped: %s", in.WindowID, msg)
				}
				return workflowFailedError{fmt.Errorf("window %s: %w", in.WindowID, err)}
			}
			return printReport(g, cmd, &rep)
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "window file (YAML)")
	cmd.Flags().BoolVar(&wait, "wait", false, "wait for the window to finish and print its report")
	cmd.Flags().BoolVar(&overrideFreeze, "override-freeze", false, "start even inside a freeze of its tenants (needs --reason; recorded in the report)")
	cmd.Flags().StringVar(&reason, "reason", "", "why the freeze is overridden")
	return cmd
}

func windowStatusCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "status WINDOW-ID",
		Short: "Show a window's phase, pending decision and every job's state",
		Args:  oneArg("WINDOW-ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var st workflows.WindowState
			if err := g.query(cmd.Context(), workflows.WindowWorkflowID(args[0]), workflows.QueryStatus, &st); err != nil {
				return fmt.Errorf("status of window %s: %w", args[0], err)
			}
			if g.output == outputJSON {
				return printJSON(cmd.OutOrStdout(), st)
			}
			return printWindowState(cmd.OutOrStdout(), &st)
		},
	}
}

// printWindowState is `window status` as text: phase, the pending decision
// with the commands that answer it, the canary and every job.
func printWindowState(w io.Writer, st *workflows.WindowState) error {
	fmt.Fprintf(w, "window  %s\nphase   %s\n", st.WindowID, st.Phase)
	if st.Paused {
		fmt.Fprintf(w, "paused  by %s\n", st.PausedBy)
	}
	if p := st.Pending; p != nil {
		// A decision about failed jobs has a line per job after its first.
		fmt.Fprintf(w, "waiting %s since %s\n        %s\n        allowed: %s\n", p.Kind, p.Since.Format("15:04:05"),
			strings.ReplaceAll(p.Reason, "\n", "\n        "), strings.Join(p.Allowed, ", "))
		if len(p.Jobs) > 0 {
			fmt.Fprintf(w, "        jobs: %s\n", strings.Join(p.Jobs, ", "))
		}
		for _, c := range workflows.WindowCommands(st.WindowID, p) {
			fmt.Fprintf(w, "        answer: %s\n", c)
		}
	}
	if c := st.Canary; c != nil {
		outcome := c.Outcome
		if outcome == "" {
			outcome = "not run yet"
		}
		fmt.Fprintf(w, "canary  %s drill %s (attempts %d)", c.Key, outcome, c.Attempts)
		if c.WaivedBy != "" {
			fmt.Fprintf(w, ", waived by %s", c.WaivedBy)
		}
		fmt.Fprintln(w)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nJOB\tSAVEPOINT\tRESTART\tWAVE\tNOTE")
	for _, j := range st.Jobs {
		note := j.SkipReason
		if note == "" {
			note = j.RestartError + j.SavepointError + j.ProofError
		}
		sp := j.SavepointState
		if j.ProofState != "" {
			sp += ", proof " + j.ProofState
		}
		if j.Rehearsal != "" {
			sp = strings.TrimPrefix(sp+", rehearsal "+j.Rehearsal, ", ")
			if note == "" && j.Rehearsal != catalog.RehearsalCompatible {
				note = j.RehearsalCause
			}
		}
		if len(note) > 100 {
			note = note[:100] + "..."
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", j.Target.Label(), sp, j.RestartState, j.RestartWave, note)
	}
	return tw.Flush()
}

func windowReportCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "report WINDOW-ID",
		Short: "Print a window's report (per job and per tenant)",
		Args:  oneArg("WINDOW-ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var rep workflows.WindowReport
			if err := g.query(cmd.Context(), workflows.WindowWorkflowID(args[0]), workflows.QueryReport, &rep); err != nil {
				return fmt.Errorf("report of window %s: %w", args[0], err)
			}
			return printReport(g, cmd, &rep)
		},
	}
}

// printReport prints a window's or a governance run's report: JSON, or
// the Markdown the workflow also writes to storage.
func printReport(g *globals, cmd *cobra.Command, rep interface{ Markdown() string }) error {
	if g.output == outputJSON {
		return printJSON(cmd.OutOrStdout(), rep)
	}
	_, err := fmt.Fprint(cmd.OutOrStdout(), rep.Markdown())
	return err
}

func windowSignalCommand(g *globals, use, short, signal string) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   use + " WINDOW-ID",
		Short: short,
		Args:  oneArg("WINDOW-ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.dial(cmd.Context())
			if err != nil {
				return err
			}
			defer c.Close()
			var payload interface{} = workflows.PauseRequest{By: operator(), Reason: reason}
			if signal == workflows.SignalResume {
				payload = workflows.ResumeRequest{By: operator()}
			}
			if err := c.SignalWorkflow(cmd.Context(), workflows.WindowWorkflowID(args[0]), "", signal, payload); err != nil {
				return fmt.Errorf("%s window %s: %w", use, args[0], err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s sent to window %s\n", use, args[0])
			return nil
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why (recorded)")
	return cmd
}

func windowUpdateCommand(g *globals, name, short string) *cobra.Command {
	var reason, action, job string
	use := name + " WINDOW-ID"
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  oneArg("WINDOW-ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var arg interface{}
			var update string
			switch name {
			case "confirm-network-change":
				update, arg = workflows.UpdateConfirmNetworkChange, workflows.ConfirmNetworkChangeRequest{By: operator(), Reason: reason}
			case "decide":
				switch action {
				case "":
					return usageErrorf("--action is required: resume, retry, retry-job, skip-job or abort")
				case workflows.ActionRetryJob, workflows.ActionSkipJob:
					if job == "" {
						return usageErrorf("--action=%s needs --job CLUSTER/JOB: the job to %s", action, strings.TrimSuffix(action, "-job"))
					}
				case workflows.ActionResume, workflows.ActionRetry, workflows.ActionAbort:
					if job != "" {
						return usageErrorf("--job applies to retry-job and skip-job, not to --action=%s", action)
					}
				default:
					return usageErrorf("--action=%q is not valid: use resume, retry, retry-job, skip-job or abort", action)
				}
				update, arg = workflows.UpdateDecide, workflows.DecideRequest{Action: action, Job: job, By: operator(), Reason: reason}
			case "abort":
				if reason == "" {
					return usageErrorf("--reason is required for abort: it is recorded in the report")
				}
				update, arg = workflows.UpdateAbort, workflows.AbortRequest{By: operator(), Reason: reason}
			}
			var st workflows.WindowState
			if err := g.update(cmd.Context(), workflows.WindowWorkflowID(args[0]), update, arg, &st); err != nil {
				return fmt.Errorf("%s on window %s: %w", name, args[0], err)
			}
			if g.output == outputJSON {
				return printJSON(cmd.OutOrStdout(), st)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s accepted by window %s (phase %s)\n", name, args[0], st.Phase)
			return nil
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why (recorded in the report)")
	if name == "decide" {
		cmd.Flags().StringVar(&action, "action", "", "resume, retry, retry-job, skip-job or abort")
		cmd.Flags().StringVar(&job, "job", "", "job key cluster/job-name, for retry-job and skip-job")
	}
	return cmd
}

// operator names who sends a command: FLINKMAINT_OPERATOR, else the login.
// freezeOverride is what --override-freeze and --reason ask for: nil
// without the flag; with it, the reason is required (it is recorded).
func freezeOverride(override bool, reason, what string) (*workflows.FreezeOverride, error) {
	if !override {
		return nil, nil
	}
	if reason == "" {
		return nil, usageErrorf("--override-freeze needs --reason: why %s during a freeze (it is recorded)", what)
	}
	return &workflows.FreezeOverride{By: operator(), Reason: reason}, nil
}

func operator() string {
	if v := os.Getenv("FLINKMAINT_OPERATOR"); v != "" {
		return v
	}
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return "unknown"
}
