package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/flinkmaint/flinkmaint/internal/checkpoint"
	"github.com/flinkmaint/flinkmaint/internal/storage"
)

// maxMetadataBytes bounds the _metadata read into memory (the parser's own
// limit is the same).
const maxMetadataBytes = 1 << 30

func newMetadataCommand(g *globals) *cobra.Command {
	cmd := newGroupCommand("metadata", "Read Flink checkpoint and savepoint _metadata")
	var hdfsUser string
	inspect := &cobra.Command{
		Use:   "inspect PATH",
		Short: "List what a checkpoint or savepoint references (PATH: its _metadata or its directory; local or hdfs://)",
		Long: "inspect parses a _metadata file (Flink 1.3 to 2.3, format versions 2 to 6) and prints its version, checkpoint id, " +
			"operators and every file it references as an absolute path with its kind and scope. It never guesses: an unknown " +
			"version or handle, or a truncated file, is an error naming the byte offset.",
		Args: oneArg("PATH"),
		// inspect talks to storage, not Temporal: skip the connection checks.
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			if g.output != outputTable && g.output != outputJSON {
				return usageErrorf("--output=%q is not valid: use %s or %s", g.output, outputTable, outputJSON)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			location := strings.TrimRight(args[0], "/")
			if !strings.HasSuffix(location, "/_metadata") && location != "_metadata" {
				location += "/_metadata"
			}
			if !strings.Contains(location, "://") {
				abs, err := filepath.Abs(location)
				if err != nil {
					return usageErrorf("path %q: %v", args[0], err)
				}
				location = filepath.ToSlash(abs)
			}
			resolver := &storage.Resolver{HDFS: storage.HDFSOptions{User: hdfsUser, HadoopConfDir: os.Getenv("HADOOP_CONF_DIR")}}
			defer resolver.Close() //nolint:errcheck // read-only use
			fs, p, err := resolver.Resolve(cmd.Context(), location)
			if err != nil {
				// A path that is no path or names a file system this
				// command cannot read is bad input; a namenode that does
				// not answer is a failure.
				if errors.Is(err, storage.ErrInvalidPath) || errors.Is(err, storage.ErrWrongFileSystem) {
					return usageErrorf("path %q: %v", args[0], err)
				}
				return fmt.Errorf("open %s: %w", location, err)
			}
			data, err := fs.ReadFile(cmd.Context(), p, maxMetadataBytes)
			if err != nil {
				return fmt.Errorf("read %s: %w", location, err)
			}
			md, err := checkpoint.ParseBytes(data, location)
			if err != nil {
				return fmt.Errorf("%s: %w", location, err)
			}
			if g.output == outputJSON {
				return printJSON(cmd.OutOrStdout(), md)
			}
			w := cmd.OutOrStdout()
			kind := "checkpoint"
			if md.Properties != nil && strings.Contains(strings.ToLower(md.Properties.SnapshotType), "savepoint") {
				kind = "savepoint"
			}
			fmt.Fprintf(w, "location      %s\nversion       %d\ncheckpoint id %d (%s)\noperators     %d\nfiles         %d\ninline state  %d handles, %d bytes\n\n",
				location, md.Version, md.CheckpointID, kind, len(md.Operators), len(md.Files), md.Inline.Handles, md.Inline.Bytes)
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SCOPE\tKIND\tSIZE\tPATH")
			for _, f := range md.Files {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", f.Scope, f.Kind, f.Size, f.Path)
			}
			return tw.Flush()
		},
	}
	inspect.Flags().StringVar(&hdfsUser, "hdfs-user", os.Getenv("HADOOP_USER_NAME"), "HDFS user for hdfs:// paths (env HADOOP_USER_NAME)")
	cmd.AddCommand(inspect)
	return cmd
}
