// Command flinkmaint is the operator CLI: it starts maintenance windows and
// governance runs, sends decisions, and shows status.
//
// Exit codes:
//
//	0  success
//	1  the operation failed (see the message)
//	2  invalid usage: unknown command, bad flag or argument value
//	3  the Temporal frontend is unreachable
//	4  the workflow ran and failed, or did not finish within --timeout
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/flinkmaint/flinkmaint/internal/buildinfo"
	"github.com/flinkmaint/flinkmaint/internal/temporalconn"
)

const (
	exitOK             = 0
	exitFailure        = 1
	exitUsage          = 2
	exitUnreachable    = 3
	exitWorkflowFailed = 4
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	root := newRootCommand(getenv, stdout, stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	var silent silentExit
	if errors.As(err, &silent) {
		return silent.code
	}
	fmt.Fprintf(stderr, "flinkmaint: %v\n", err)
	return exitCode(err)
}

// silentExit ends a command with an exit code after it has said
// everything itself (doctor's table).
type silentExit struct{ code int }

func (e silentExit) Error() string { return fmt.Sprintf("exit code %d", e.code) }

// usageError marks errors in how the CLI was called.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usageErrorf(format string, args ...interface{}) error {
	return usageError{fmt.Errorf(format, args...)}
}

// oneArg requires exactly one positional argument, named what (PATH, NAME,
// WINDOW-ID, ...) in the usage error a wrong count gives.
func oneArg(what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != 1 {
			return usageErrorf("%s takes exactly one %s argument, got %d: usage: %s", cmd.CommandPath(), what, len(args), cmd.UseLine())
		}
		return nil
	}
}

// workflowFailedError marks a workflow that ran and failed or timed out.
type workflowFailedError struct{ err error }

func (e workflowFailedError) Error() string { return e.err.Error() }
func (e workflowFailedError) Unwrap() error { return e.err }

func exitCode(err error) int {
	var ue usageError
	var wf workflowFailedError
	switch {
	case errors.As(err, &ue), strings.HasPrefix(err.Error(), "unknown command"), strings.HasPrefix(err.Error(), "unknown flag"):
		return exitUsage
	case errors.Is(err, temporalconn.ErrUnreachable):
		return exitUnreachable
	case errors.As(err, &wf):
		return exitWorkflowFailed
	}
	return exitFailure
}

func newRootCommand(getenv func(string) string, stdout, stderr io.Writer) *cobra.Command {
	g := &globals{getenv: getenv, stderr: stderr}
	root := &cobra.Command{
		Use:   "flinkmaint",
		Short: "Maintenance orchestration for fleets of Apache Flink jobs",
		Long: "flinkmaint runs maintenance windows and state governance for Flink jobs on Kubernetes with state on HDFS, as Temporal workflows.\n\n" +
			"Exit codes: 0 success, 1 operation failed, 2 invalid usage, 3 Temporal unreachable, 4 workflow failed or timed out.",
		Version:       buildinfo.Describe("flinkmaint", version),
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			return g.validate()
		},
	}
	root.SetVersionTemplate("{{.Version}}\n") // as `flinkmaint version` prints it
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	g.bindFlags(root)

	root.AddCommand(newPingCommand(g))
	root.AddCommand(&cobra.Command{
		Use:   "version",
		Short: "Print the release, the commit and the Go version of this build",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), buildinfo.Describe("flinkmaint", version))
			return err
		},
	})
	root.AddCommand(
		newWindowCommand(g),
		newGovernanceCommand(g),
		newQuotaCommand(g),
		newMetadataCommand(g),
		newSavepointsCommand(g),
		newUsageCommand(g),
		newDrillCommand(g),
		newUpgradeCommand(g),
		newDoctorCommand(g),
		newInventoryCommand(g),
	)
	setExamples(root)
	setCompletions(root, g)
	return root
}

// newGroupCommand is a command group; it only lists its subcommands and
// rejects unknown ones with a usage error.
// groupAnnotation marks a command that only groups others (its help is
// all it does).
const groupAnnotation = "flinkmaint/group"

func newGroupCommand(name, short string) *cobra.Command {
	return &cobra.Command{
		Use:         name,
		Short:       short,
		Annotations: map[string]string{groupAnnotation: "true"},
		Args:        cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.HasAvailableSubCommands() {
				return usageErrorf("%q has no subcommands in this version", cmd.CommandPath())
			}
			return cmd.Help()
		},
	}
}
