package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"io"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/flinkmaint/flinkmaint/internal/config"
	"github.com/flinkmaint/flinkmaint/internal/logging"
	"github.com/flinkmaint/flinkmaint/internal/temporalconn"
	"github.com/flinkmaint/flinkmaint/workflows"
)

// Output formats of --output.
const (
	outputTable = "table"
	outputJSON  = "json"
)

// globals are the flags every command shares: Temporal connection and
// output. validate resolves the connection (resolveConnection) into conn,
// taskQueue and connectTimeout.
type globals struct {
	getenv         func(string) string
	stderr         io.Writer
	conn           temporalconn.Options
	taskQueue      string
	output         string
	connectTimeout time.Duration
	flags          flagValues
}

func (g *globals) bindFlags(root *cobra.Command) {
	f := root.PersistentFlags()
	fl := &g.flags
	f.StringVar(&fl.profile, "profile", "", "profile of the config file $XDG_CONFIG_HOME/flinkmaint/config.yaml to connect with (env "+EnvProfile+"; default: its profile named default, if any)")
	f.StringVar(&fl.conn.Address, "address", "", "Temporal frontend host:port (env TEMPORAL_ADDRESS, default "+temporalconn.DefaultAddress+")")
	f.StringVar(&fl.conn.Namespace, "namespace", "", "Temporal namespace (env TEMPORAL_NAMESPACE, default "+temporalconn.DefaultNamespace+")")
	f.StringVar(&fl.conn.TLS.CertFile, "tls-cert", "", "client certificate for mutual TLS (env "+envTLSCert+" or "+temporalconn.EnvTLSCert+")")
	f.StringVar(&fl.conn.TLS.KeyFile, "tls-key", "", "client key for mutual TLS (env "+envTLSKey+" or "+temporalconn.EnvTLSKey+")")
	f.StringVar(&fl.conn.TLS.CAFile, "tls-ca", "", "CA bundle that signed the server certificate (env "+envTLSCA+" or "+temporalconn.EnvTLSCA+")")
	f.StringVar(&fl.conn.TLS.ServerName, "tls-server-name", "", "server name to verify (env TEMPORAL_TLS_SERVER_NAME)")
	f.StringVar(&fl.conn.UIURL, "ui-url", "", "Temporal Web UI base for links (env TEMPORAL_UI_URL, default "+temporalconn.DefaultUIURL+")")
	f.StringVar(&fl.taskQueue, "task-queue", "", "task queue the worker polls (env "+config.EnvTaskQueue+", default "+config.DefaultTaskQueue+")")
	f.StringVarP(&g.output, "output", "o", outputTable, "output format: table or json")
	durationFlag(f, &fl.connectTimeout, "connect-timeout", defaultConnectTimeout, "how long to wait for the Temporal frontend")
	fl.set = func(name string) bool { return f.Changed(name) }
	// The API key is read from TEMPORAL_API_KEY or a profile's apiKeyFile
	// only: a flag would leak it into shell history and process listings.
}

// validate resolves the connection and checks it and the output format.
func (g *globals) validate() error {
	c, err := resolveConnection(g.flags, g.getenv)
	if err != nil {
		return usageError{err}
	}
	g.conn, g.taskQueue, g.connectTimeout = c.opts, c.taskQueue, c.connectTimeout
	if g.output != outputTable && g.output != outputJSON {
		return usageErrorf("--output=%q is not valid: use %s or %s", g.output, outputTable, outputJSON)
	}
	if g.connectTimeout <= 0 {
		return usageError{c.explain(fmt.Errorf("%s=%s is not valid: use a positive duration such as 10s", c.name("connectTimeout"), g.connectTimeout))}
	}
	if errs := g.conn.Validate(c.name); len(errs) > 0 {
		return usageError{c.explain(errors.Join(errs...))}
	}
	return nil
}

// connFlag names the flag of a connection setting, from its YAML key.
func connFlag(key string) string {
	switch key {
	case "tls.certFile":
		return "--tls-cert"
	case "tls.keyFile":
		return "--tls-key"
	case "tls.caFile":
		return "--tls-ca"
	case "tls.serverName":
		return "--tls-server-name"
	case "uiURL":
		return "--ui-url"
	case "taskQueue":
		return "--task-queue"
	case "connectTimeout":
		return "--connect-timeout"
	case "apiKey":
		return temporalconn.EnvAPIKey
	}
	return "--" + key
}

// dial connects to Temporal; the CLI shows only the SDK's warnings and errors.
func (g *globals) dial(ctx context.Context) (client.Client, error) {
	zl, err := logging.New(logging.Options{Level: "warn", Format: logging.FormatConsole, Output: g.stderr})
	if err != nil {
		return nil, err
	}
	return g.conn.Dial(ctx, g.connectTimeout, logging.NewTemporalLogger(zl), nil)
}

// printJSON writes v as indented JSON.
func printJSON(w io.Writer, v interface{}) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encode output: %w", err)
	}
	return nil
}

// query runs a workflow query and decodes its answer into out.
func (g *globals) query(ctx context.Context, workflowID, queryType string, out interface{}) error {
	c, err := g.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	v, err := c.QueryWorkflow(ctx, workflowID, "", queryType)
	if err != nil {
		return err
	}
	return v.Get(out)
}

// update sends a workflow update, waits for it to complete and decodes its
// result into out (nil to ignore it). A validator's rejection is returned
// as "refused: ...".
func (g *globals) update(ctx context.Context, workflowID, updateName string, arg, out interface{}) error {
	c, err := g.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: workflowID, UpdateName: updateName, Args: []interface{}{arg},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err != nil {
		return fmt.Errorf("refused: %w", err)
	}
	return h.Get(ctx, out)
}

// runOnWorker runs one workflow of type wfType with input in on a worker,
// waits for it at most timeout and decodes its result into out.
func runOnWorker(cmd *cobra.Command, g *globals, timeout time.Duration, id, wfType, kind string, in, out any) error {
	c, err := g.dial(cmd.Context())
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := contextWithTimeout(cmd, timeout)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: id, TaskQueue: g.taskQueue, WorkflowExecutionTimeout: timeout,
		TypedSearchAttributes: temporal.NewSearchAttributes(workflows.SearchAttrKind.ValueSet(kind)),
		StaticSummary:         workflows.StartSummary(in),
	}, wfType, in)
	if err != nil {
		return fmt.Errorf("start %s workflow: %w", wfType, err)
	}
	if err := run.Get(ctx, out); err != nil {
		return workflowFailedError{fmt.Errorf("%s failed or did not complete within %s (is a worker polling task queue %q?): %w\n  %s",
			wfType, timeout, g.taskQueue, err, g.conn.ExecutionURL(run.GetID(), run.GetRunID()))}
	}
	return nil
}

// startOnce starts a workflow under a name that is never reused: a name
// already taken, by a running or a finished run, is an error naming what,
// not the earlier run handed back as if it had started.
func (g *globals) startOnce(ctx context.Context, c client.Client, what, name, id, kind string, memo map[string]interface{},
	wfType string, in interface{}) (client.WorkflowRun, error) {
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: id, TaskQueue: g.taskQueue,
		WorkflowIDReusePolicy:                    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy:                 enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		WorkflowExecutionErrorWhenAlreadyStarted: true,
		TypedSearchAttributes:                    temporal.NewSearchAttributes(workflows.SearchAttrKind.ValueSet(kind)),
		Memo:                                     memo,
		StaticSummary:                            workflows.StartSummary(in),
	}, wfType, in)
	if err != nil {
		var started *serviceerror.WorkflowExecutionAlreadyStarted
		if errors.As(err, &started) {
			return nil, fmt.Errorf("%s %q was already started once (names are never reused): %w", what, name, err)
		}
		return nil, fmt.Errorf("start %s: %w", what, err)
	}
	return run, nil
}
