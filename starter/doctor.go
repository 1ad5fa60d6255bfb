package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/flinkmaint/flinkmaint/activities/doctor"
	"github.com/flinkmaint/flinkmaint/workflows"
)

// Outcomes of a doctor check.
const (
	checkOK   = doctor.CheckOK
	checkWarn = doctor.CheckWarn
	checkFail = doctor.CheckFail
)

// doctorCheck is one line of `flinkmaint doctor`; the worker's checks
// come back in the same shape.
type doctorCheck = doctor.DoctorCheck

// exitWarnings is doctor's exit code when nothing failed but something
// deserves a look.
const exitWarnings = 5

func newDoctorCommand(g *globals) *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check the deployment end to end: Temporal, search attributes, workers, and from a worker storage, Kerberos, RBAC, Flink and notification sinks",
		Long: `doctor checks, in order, what a run needs and says what is wrong and how to fix it. From here:
the frontend answers; the namespace exists; every search attribute flinkmaint sets exists with its
type; workers poll the task queue for workflow and activity tasks (and which); a ping workflow
completes on one of them.

Then a WorkerDoctor run on one worker checks what only the worker can see: its version; every
storage root (writable roots, trash, audit, plan and drill dirs, reference roots) exists and is
readable, and writable where the worker writes (a probe file is written and removed again);
the Kerberos login; the Kubernetes API and the worker's RBAC in every tenant namespace; every
Flink cluster of the inventory and the drill cluster answer; every notification sink answers
(no notice is sent). With several workers on the queue, one of them is checked.

Exit codes: 0 every check passed, 5 only warnings, 1 a check failed, 3 Temporal unreachable.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if timeout <= 0 {
				return usageErrorf("--timeout=%s is not valid: use a positive duration such as 30s", timeout)
			}
			ctx, cancel := contextWithTimeout(cmd, timeout)
			defer cancel()
			var checks []doctorCheck
			c, err := g.dial(ctx)
			if err != nil {
				checks = append(checks, doctorCheck{Check: "temporal", Result: checkFail, Detail: err.Error(),
					Fix: "check --address (TEMPORAL_ADDRESS), TLS and the network path to the frontend"})
				if perr := printDoctor(g, cmd, checks); perr != nil {
					return perr
				}
				return err
			}
			defer c.Close()
			checks = append(checks, doctorCheck{Check: "temporal", Result: checkOK, Detail: "frontend " + g.conn.Address + " answers"})
			checks = append(checks, doctorChecks(ctx, g, c)...)
			if err := printDoctor(g, cmd, checks); err != nil {
				return err
			}
			worst := checkOK
			for _, ch := range checks {
				if ch.Result == checkFail || (ch.Result == checkWarn && worst == checkOK) {
					worst = ch.Result
				}
			}
			switch worst {
			case checkFail:
				return silentExit{code: exitFailure}
			case checkWarn:
				return silentExit{code: exitWarnings}
			}
			return nil
		},
	}
	durationFlag(cmd.Flags(), &timeout, "timeout", 2*time.Minute, "bound on all the checks, the ping and the worker's included")
	return cmd
}

// doctorChecks runs the checks that need a connection.
func doctorChecks(ctx context.Context, g *globals, c client.Client) []doctorCheck {
	ns := g.conn.Namespace
	var checks []doctorCheck
	if _, err := c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: ns}); err != nil {
		return append(checks, doctorCheck{Check: "namespace", Result: checkFail, Detail: fmt.Sprintf("namespace %q: %v", ns, err),
			Fix: fmt.Sprintf("temporal operator namespace create --namespace %s (or set --namespace / TEMPORAL_NAMESPACE)", ns)})
	}
	checks = append(checks, doctorCheck{Check: "namespace", Result: checkOK, Detail: fmt.Sprintf("namespace %q exists", ns)})
	checks = append(checks, searchAttributeCheck(ctx, c, ns))
	pollers := pollerCheck(ctx, c, g.taskQueue)
	checks = append(checks, pollers)
	if pollers.Result == checkFail {
		return checks
	}
	ping := pingCheck(ctx, g, c)
	checks = append(checks, ping)
	if ping.Result == checkFail {
		return checks
	}
	return append(checks, workerChecks(ctx, g, c)...)
}

// workerChecks runs WorkerDoctor on a worker of the queue and returns
// its findings.
func workerChecks(ctx context.Context, g *globals, c client.Client) []doctorCheck {
	in := doctor.DoctorInput{}
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: workflows.WorkerDoctorID(nonce()), TaskQueue: g.taskQueue, WorkflowExecutionTimeout: 5 * time.Minute,
		TypedSearchAttributes: temporal.NewSearchAttributes(workflows.SearchAttrKind.ValueSet(workflows.KindDoctor)),
		StaticSummary:         workflows.StartSummary(in),
	}, workflows.WorkerDoctorWorkflowType, in)
	if err != nil {
		return []doctorCheck{{Check: "worker checks", Result: checkFail, Detail: fmt.Sprintf("start %s: %v", workflows.WorkerDoctorWorkflowType, err)}}
	}
	var res doctor.DoctorResult
	if err := run.Get(ctx, &res); err != nil {
		detail := fmt.Sprintf("%s did not complete: %v", run.GetID(), err)
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			detail = fmt.Sprintf("%s did not complete within --timeout", run.GetID())
		}
		return []doctorCheck{{Check: "worker checks", Result: checkFail, Detail: detail,
			Fix: "give doctor a longer --timeout, or read the worker's log; a worker older than this CLI does not know " + workflows.WorkerDoctorWorkflowType}}
	}
	return res.Checks
}

// searchAttributeCheck compares the namespace's search attributes with
// those flinkmaint sets; a missing or mistyped one makes starting a run
// fail.
func searchAttributeCheck(ctx context.Context, c client.Client, ns string) doctorCheck {
	resp, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: ns})
	if err != nil {
		return doctorCheck{Check: "search attributes", Result: checkWarn, Detail: fmt.Sprintf("cannot list them: %v", err),
			Fix: "ask the Temporal operators whether these exist: " + strings.Join(searchAttributeNames(), ", ")}
	}
	have := resp.GetCustomAttributes()
	var missing, wrong, create []string
	for _, def := range searchAttributeTypes() {
		got, ok := have[def.name]
		switch {
		case !ok:
			missing = append(missing, def.name)
			create = append(create, "--name "+def.name+" --type "+def.typ)
		case got.String() != def.enum.String():
			wrong = append(wrong, fmt.Sprintf("%s is %s, want %s", def.name, got, def.typ))
		}
	}
	switch {
	case len(wrong) > 0:
		return doctorCheck{Check: "search attributes", Result: checkFail, Detail: strings.Join(wrong, "; "),
			Fix: "a search attribute's type cannot change: remove it and create it again with the type named"}
	case len(missing) > 0:
		return doctorCheck{Check: "search attributes", Result: checkFail, Detail: "missing: " + strings.Join(missing, ", "),
			Fix: "temporal operator search-attribute create --namespace " + ns + " " + strings.Join(create, " ")}
	}
	return doctorCheck{Check: "search attributes", Result: checkOK, Detail: fmt.Sprintf("all %d present with their types", len(searchAttributeTypes()))}
}

type searchAttributeType struct {
	name, typ string
	enum      enumspb.IndexedValueType
}

// searchAttributeTypes are the search attributes flinkmaint sets, sorted.
func searchAttributeTypes() []searchAttributeType {
	var out []searchAttributeType
	for key := range workflows.SearchAttributeDefinitions().GetUntypedValues() {
		var typ string
		var enum enumspb.IndexedValueType
		switch key.GetValueType() {
		case enumspb.INDEXED_VALUE_TYPE_KEYWORD:
			typ, enum = "Keyword", enumspb.INDEXED_VALUE_TYPE_KEYWORD
		case enumspb.INDEXED_VALUE_TYPE_KEYWORD_LIST:
			typ, enum = "KeywordList", enumspb.INDEXED_VALUE_TYPE_KEYWORD_LIST
		case enumspb.INDEXED_VALUE_TYPE_INT:
			typ, enum = "Int", enumspb.INDEXED_VALUE_TYPE_INT
		case enumspb.INDEXED_VALUE_TYPE_BOOL:
			typ, enum = "Bool", enumspb.INDEXED_VALUE_TYPE_BOOL
		default:
			typ, enum = key.GetValueType().String(), key.GetValueType()
		}
		out = append(out, searchAttributeType{name: key.GetName(), typ: typ, enum: enum})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

func searchAttributeNames() []string {
	var names []string
	for _, t := range searchAttributeTypes() {
		names = append(names, t.name)
	}
	return names
}

// pollerCheck says which workers poll the task queue, for workflow tasks
// and for activity tasks: a queue with none of either runs nothing.
func pollerCheck(ctx context.Context, c client.Client, queue string) doctorCheck {
	var lines []string
	var missing []string
	for _, kind := range []struct {
		name string
		typ  enumspb.TaskQueueType
	}{{"workflow", enumspb.TASK_QUEUE_TYPE_WORKFLOW}, {"activity", enumspb.TASK_QUEUE_TYPE_ACTIVITY}} {
		resp, err := c.DescribeTaskQueue(ctx, queue, kind.typ)
		if err != nil {
			return doctorCheck{Check: "workers", Result: checkFail, Detail: fmt.Sprintf("describe task queue %q: %v", queue, err)}
		}
		ids := pollerIdentities(resp.GetPollers())
		if len(ids) == 0 {
			missing = append(missing, kind.name)
			continue
		}
		lines = append(lines, fmt.Sprintf("%s tasks: %s", kind.name, strings.Join(ids, ", ")))
	}
	if len(missing) > 0 {
		return doctorCheck{Check: "workers", Result: checkFail,
			Detail: fmt.Sprintf("no worker polled task queue %q for %s tasks in the last minutes", queue, strings.Join(missing, " or ")),
			Fix:    fmt.Sprintf("start flinkmaint-worker with worker.taskQueue=%s and this namespace (or give --task-queue the queue it polls)", queue)}
	}
	return doctorCheck{Check: "workers", Result: checkOK, Detail: strings.Join(lines, "; ")}
}

func pollerIdentities(pollers []*taskqueuepb.PollerInfo) []string {
	seen := map[string]bool{}
	var ids []string
	for _, p := range pollers {
		if id := p.GetIdentity(); id != "" && !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// pingCheck runs a ping through a worker: the whole path of a run, the
// payload codec included.
func pingCheck(ctx context.Context, g *globals, c client.Client) doctorCheck {
	started := time.Now()
	in := workflows.PingInput{Message: "doctor"}
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: workflows.PingWorkflowID(nonce()), TaskQueue: g.taskQueue, WorkflowExecutionTimeout: time.Minute,
		TypedSearchAttributes: temporal.NewSearchAttributes(workflows.SearchAttrKind.ValueSet(workflows.KindPing)),
		StaticSummary:         workflows.StartSummary(in),
	}, workflows.PingWorkflowType, in)
	if err != nil {
		return doctorCheck{Check: "round trip", Result: checkFail, Detail: fmt.Sprintf("start a ping: %v", err)}
	}
	var res workflows.PingResult
	if err := run.Get(ctx, &res); err != nil {
		detail := fmt.Sprintf("ping %s did not complete: %v", run.GetID(), err)
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			detail = fmt.Sprintf("ping %s did not complete within --timeout", run.GetID())
		}
		return doctorCheck{Check: "round trip", Result: checkFail, Detail: detail,
			Fix: "read the worker's log: it polls but does not finish the ping (a crash loop, or a worker of another deployment on this queue)"}
	}
	return doctorCheck{Check: "round trip", Result: checkOK,
		Detail: fmt.Sprintf("ping answered by %s in %s", res.Worker, time.Since(started).Round(time.Millisecond))}
}

func printDoctor(g *globals, cmd *cobra.Command, checks []doctorCheck) error {
	if g.output == outputJSON {
		return printJSON(cmd.OutOrStdout(), checks)
	}
	tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tRESULT\tDETAIL")
	for _, ch := range checks {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", ch.Check, strings.ToUpper(ch.Result), ch.Detail)
		if ch.Fix != "" {
			fmt.Fprintf(tw, "\t\tfix: %s\n", ch.Fix)
		}
	}
	return tw.Flush()
}
