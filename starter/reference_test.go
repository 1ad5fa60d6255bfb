package main

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/flinkmaint/flinkmaint/internal/testsupport/gendoc"
)

// The CLI reference, docs/cli-reference.md, is generated from the cobra
// commands: every command's use line, text, examples and flags. The test
// fails when the file is not what the commands say; `make docs`
// (FLINKMAINT_UPDATE_DOCS=1) writes it.
const cliReferenceFile = "docs/cli-reference.md"

// renderCLIReference writes the reference of root and every command under
// it, in the order `--help` lists them.
func renderCLIReference(root *cobra.Command) []byte {
	var b bytes.Buffer
	b.WriteString("# CLI reference\n\n")
	b.WriteString("<!-- Generated from the commands by `make docs`: edit their help text, not this file. -->\n\n")
	b.WriteString("Every command of `flinkmaint`, as `--help` shows it. [The CLI](cli.md) says how the commands\n")
	b.WriteString("fit together, and which exit code means what.\n")
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
			return
		}
		writeCommand(&b, c)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return b.Bytes()
}

func writeCommand(b *bytes.Buffer, c *cobra.Command) {
	fmt.Fprintf(b, "\n## %s\n\n", c.CommandPath())
	if c.Short != "" {
		b.WriteString(strings.TrimSpace(c.Short) + "\n\n")
	}
	if long := strings.TrimSpace(c.Long); long != "" && long != strings.TrimSpace(c.Short) {
		b.WriteString("```text\n" + long + "\n```\n\n")
	}
	fmt.Fprintf(b, "```text\n%s\n```\n", c.UseLine())
	if ex := strings.TrimRight(c.Example, " \n"); ex != "" {
		b.WriteString("\nExamples:\n\n```sh\n" + ex + "\n```\n")
	}
	if c.HasAvailableSubCommands() {
		b.WriteString("\n| command | what |\n|---|---|\n")
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() && sub.Name() != "help" && sub.Name() != "completion" {
				fmt.Fprintf(b, "| [`%s`](#%s) | %s |\n", sub.Name(), anchor(sub.CommandPath()), cell(sub.Short))
			}
		}
	}
	flags := c.NonInheritedFlags()
	if !c.HasParent() {
		flags = c.PersistentFlags()
	}
	var rows []string
	flags.VisitAll(func(f *pflag.Flag) {
		if f.Hidden || f.Name == "help" {
			return
		}
		name := "`--" + f.Name + "`"
		if f.Shorthand != "" {
			name = "`-" + f.Shorthand + "`, " + name
		}
		def := f.DefValue
		if def == "" || def == "[]" || (def == "false" && f.Value.Type() == "bool") || (def == "0s" && f.Value.Type() == "duration") {
			def = ""
		} else {
			def = "`" + def + "`"
		}
		rows = append(rows, fmt.Sprintf("| %s | %s | %s | %s |", name, f.Value.Type(), def, cell(f.Usage)))
	})
	if len(rows) > 0 {
		heading := "flags"
		if !c.HasParent() {
			heading = "global flags (every command takes them)"
		}
		fmt.Fprintf(b, "\n| %s | type | default | meaning |\n|---|---|---|---|\n%s\n", heading, strings.Join(rows, "\n"))
	}
}

// anchor is GitHub's anchor of a heading.
func anchor(heading string) string {
	var out strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			out.WriteRune('-')
		case r == '-' || r == '_' || (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9'):
			out.WriteRune(r)
		}
	}
	return out.String()
}

// cell makes text one markdown table cell.
func cell(s string) string {
	return strings.ReplaceAll(strings.Join(strings.Fields(s), " "), "|", `\|`)
}

func TestCLIReferenceIsCurrent(t *testing.T) {
	root := newRootCommand(func(string) string { return "" }, io.Discard, io.Discard)
	gendoc.Check(t, filepath.Join("..", cliReferenceFile), renderCLIReference(root), "the commands")
}

// TestFlagHelpShowsItsType: pflag takes a back-quoted word of a flag's
// help as the name of its value ("--plan-sha256 governance status"); no
// help text may quote one.
func TestFlagHelpShowsItsType(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if strings.Contains(f.Usage, "`") {
				t.Errorf("%s --%s: help %q back-quotes a word, which --help shows as the flag's value", c.CommandPath(), f.Name, f.Usage)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCommand(func(string) string { return "" }, io.Discard, io.Discard))
}

// TestEveryCommandHasExamples: every command that does something shows
// how it is called, every example names a command, and each example line
// parses: its flags exist and its arguments are what the command takes.
func TestEveryCommandHasExamples(t *testing.T) {
	root := newRootCommand(func(string) string { return "" }, io.Discard, io.Discard)
	used := map[string]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
			return
		}
		path := strings.TrimPrefix(c.CommandPath(), "flinkmaint ")
		if c.HasParent() && c.Annotations[groupAnnotation] == "" {
			used[path] = true
			if _, ok := commandExamples[path]; !ok {
				t.Errorf("%s has no example: add one to commandExamples", c.CommandPath())
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	for path, ex := range commandExamples {
		if !used[path] {
			t.Errorf("commandExamples names %q, which is not a command", path)
			continue
		}
		lines, err := exampleCommandLines(ex)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		for _, args := range lines {
			// Each line on a fresh tree: parsing sets flags.
			r := newRootCommand(func(string) string { return "" }, io.Discard, io.Discard)
			c, rest, err := r.Find(args)
			if err == nil {
				err = c.ParseFlags(rest)
			}
			if err == nil {
				err = c.ValidateArgs(c.Flags().Args())
			}
			if err != nil {
				t.Errorf("example of %s: flinkmaint %s: %v", path, strings.Join(args, " "), err)
			}
		}
	}
}
