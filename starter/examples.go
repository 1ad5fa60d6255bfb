package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// commandExamples are the Examples: of every command that does something,
// keyed by its path under flinkmaint. One home, so that they read as one
// manual; a test runs each line's flags and arguments through the command.
var commandExamples = map[string]string{
	"ping": `flinkmaint ping`,
	"doctor": `flinkmaint doctor
flinkmaint doctor --address temporal.example:7233 --namespace flinkmaint --tls-ca /etc/flinkmaint/tls/ca.crt -o json`,
	"version": `flinkmaint version`,
	"inventory": `flinkmaint inventory
flinkmaint inventory --tenant payments -o json`,
	"quota": `flinkmaint quota
flinkmaint quota --tenant payments -o json`,
	"quota watch start": `flinkmaint quota watch start
flinkmaint quota watch start --interval 5m --tenant payments --samples-path hdfs://nn:8020/flinkmaint/quota-samples.json`,
	"quota watch stop": `flinkmaint quota watch stop`,
	"usage": `flinkmaint usage
flinkmaint usage --tenant payments --top 20`,
	"metadata inspect": `flinkmaint metadata inspect hdfs://nn:8020/flink/payments/checkpoints/3f2a9c0d1e2b4a5c6d7e8f9012345678/chk-42
HADOOP_CONF_DIR=/etc/hadoop/conf flinkmaint metadata inspect hdfs://ns1/flink/payments/savepoints/savepoint-3f2a9c-1a2b3c4d5e6f --hdfs-user flink`,

	"window plan": `flinkmaint window plan -f window.yaml`,
	"window start": `flinkmaint window start -f window.yaml
flinkmaint window start -f window.yaml --wait
flinkmaint window start -f window.yaml --override-freeze --reason "security patch, approved in CHG-1234"`,
	"window status": `flinkmaint window status nightly-2026-12-04
flinkmaint window status nightly-2026-12-04 --watch
flinkmaint window status nightly-2026-12-04 -o json`,
	"window list": `flinkmaint window list
flinkmaint window list --pending
flinkmaint window list --tenant payments --status running`,
	"governance list": `flinkmaint governance list --pending
flinkmaint governance list --tenant payments --status failed --limit 20`,
	"drill list":                    `flinkmaint drill list --status failed`,
	"upgrade list":                  `flinkmaint upgrade list --tenant payments`,
	"window report":                 `flinkmaint window report nightly-2026-12-04`,
	"window confirm-network-change": `flinkmaint window confirm-network-change nightly-2026-12-04 --reason "switch firmware upgraded, links up"`,
	"window pause":                  `flinkmaint window pause nightly-2026-12-04 --reason "NameNode failover in progress"`,
	"window resume":                 `flinkmaint window resume nightly-2026-12-04 --reason "NameNodes healthy again"`,
	"window decide": `flinkmaint window decide nightly-2026-12-04 --action retry --reason "quota raised by the storage team"
flinkmaint window decide nightly-2026-12-04 --action skip-job --job cluster-a/orders --reason "orders is restarted by its team"`,
	"window abort": `flinkmaint window abort nightly-2026-12-04 --reason "change rolled back"`,

	"governance plan": `flinkmaint governance plan --tenant payments
flinkmaint governance plan --tenant payments --keep-savepoints 3 --retired-job-ttl 14d -o json`,
	"governance run": `flinkmaint governance run --tenant payments --name payments-weekly
flinkmaint governance run --tenant payments --mode auto --action trash --purge-trash-after 7d --wait`,
	"governance status": `flinkmaint governance status payments-weekly
flinkmaint governance status payments-weekly --watch --interval 30s`,
	"governance approve": `flinkmaint governance status payments-weekly
flinkmaint governance approve payments-weekly --plan-sha256 9f2c4e1b7a3d5f60c8e9b1a2d3c4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f6 --reason "reviewed: retired jobs only"`,
	"governance reject": `flinkmaint governance reject payments-weekly --reason "orders-v1 is still needed for the audit"`,
	"governance report": `flinkmaint governance report payments-weekly
flinkmaint governance report window-nightly-2026-12-04/cleanup`,
	"governance restore": `flinkmaint governance restore payments-weekly --dry-run
flinkmaint governance restore payments-weekly --path "/flink/payments/checkpoints/0a1b*" --reason "job orders needs chk-812"`,

	"savepoints list": `flinkmaint savepoints list --tenant payments
flinkmaint savepoints list --job cluster-a/orders
flinkmaint savepoints list --unknown`,
	"savepoints adopt": `flinkmaint savepoints adopt --job cluster-a/orders hdfs://nn:8020/flink/payments/savepoints/savepoint-3f2a9c-1a2b3c4d5e6f`,

	"drill start": `flinkmaint drill start --tenant payments --wait
flinkmaint drill start --run window-nightly-2026-12-04
flinkmaint drill start --job cluster-a/orders --snapshot hdfs://nn:8020/flink/payments/savepoints/savepoint-3f2a9c-1a2b3c4d5e6f --tier 2`,
	"drill status": `flinkmaint drill status payments-weekly`,
	"drill report": `flinkmaint drill report payments-weekly`,

	"upgrade start": `flinkmaint upgrade start -f upgrade.yaml
flinkmaint upgrade start -f upgrade.yaml --wait`,
	"upgrade check": `flinkmaint upgrade check -f upgrade.yaml
flinkmaint upgrade check -f upgrade.yaml --flink-version 2.3`,
	"upgrade status": `flinkmaint upgrade status orders-v2`,
	"upgrade decide": `flinkmaint upgrade status orders-v2
flinkmaint upgrade decide orders-v2 --action allow-non-restored-state --reason "the dropped operator's state is rebuilt from Kafka"
flinkmaint upgrade decide orders-v2 --action retry --reason "the new version's jar is uploaded again"`,
	"upgrade rollback": `flinkmaint upgrade rollback orders-v2 --reason "output schema rejected downstream"`,
}

// scheduleExamples are the examples of a schedule group's commands.
func scheduleExamples(group, create, update string) map[string]string {
	p := "flinkmaint " + group + " schedule "
	return map[string]string{
		group + " schedule create":   create,
		group + " schedule update":   update,
		group + " schedule describe": p + "describe nightly",
		group + " schedule list":     p + "list",
		group + " schedule pause":    p + `pause nightly --note "freeze for the audit"`,
		group + " schedule unpause":  p + "unpause nightly",
		group + " schedule trigger":  p + "trigger nightly",
		group + " schedule delete":   p + "delete nightly",
	}
}

func init() {
	for _, m := range []map[string]string{
		scheduleExamples("governance",
			`flinkmaint governance schedule create nightly --cron "0 3 * * *" --time-zone Europe/Berlin --tenant payments
flinkmaint governance schedule create quota --every 1h --workflow quota-watch --samples-path hdfs://nn:8020/flinkmaint/quota-samples.json`,
			`flinkmaint governance schedule update nightly --keep-savepoints 3
flinkmaint governance schedule update nightly --every 7d`),
		scheduleExamples("savepoints",
			`flinkmaint savepoints schedule create nightly --every 6h --tenant payments --format native`,
			`flinkmaint savepoints schedule update nightly --concurrency 8`),
		scheduleExamples("drill",
			`flinkmaint drill schedule create nightly --cron "0 4 * * *" --tenant payments --sample 2`,
			`flinkmaint drill schedule update nightly --tier 1`),
	} {
		for k, v := range m {
			commandExamples[k] = v
		}
	}
}

// setExamples puts each command's examples on it, indented as cobra's
// help shows them.
func setExamples(root *cobra.Command) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if ex, ok := commandExamples[strings.TrimPrefix(c.CommandPath(), root.Name()+" ")]; ok {
			c.Example = "  " + strings.ReplaceAll(ex, "\n", "\n  ")
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// exampleCommandLines returns each example line's arguments after
// "flinkmaint", split as a shell would split these simple lines.
func exampleCommandLines(ex string) ([][]string, error) {
	var out [][]string
	for _, line := range strings.Split(ex, "\n") {
		line = strings.TrimSpace(line)
		if i := strings.Index(line, "flinkmaint "); i >= 0 {
			line = line[i+len("flinkmaint "):]
		} else {
			return nil, fmt.Errorf("example line %q does not run flinkmaint", line)
		}
		var args []string
		var cur strings.Builder
		inQuote, has := false, false
		for _, r := range line {
			switch {
			case r == '"':
				inQuote, has = !inQuote, true
			case r == ' ' && !inQuote:
				if has {
					args = append(args, cur.String())
					cur.Reset()
					has = false
				}
			default:
				cur.WriteRune(r)
				has = true
			}
		}
		if inQuote {
			return nil, fmt.Errorf("example line %q has an unclosed quote", line)
		}
		if has {
			args = append(args, cur.String())
		}
		out = append(out, args)
	}
	return out, nil
}
