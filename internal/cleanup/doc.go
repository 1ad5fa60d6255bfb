// Package cleanup plans and executes reference-safe deletion of Flink state:
// checkpoints, shared/taskowned state files, savepoints and HA directories,
// and of the Kubernetes objects Flink leaves behind (objects.go: TaskManagers
// of gone JobManagers, idle JobManagers, HA ConfigMaps of gone clusters),
// which are judged by age and re-detected right before they are deleted.
//
// The work is split in three:
//
//   - Gather (I/O, read-only) scans the configured roots with the layout
//     scanner, lists every file under each job's shared/ and taskowned/,
//     parses every _metadata it finds and looks for savepoint pin markers.
//   - BuildPlan (pure: no I/O, no clock) turns that listing, the live
//     inventory, pins and a Policy into a Plan: every path to delete with
//     the rule that selected it, and every path kept with the reason.
//   - Executor.Run re-verifies each item right before acting, moves it to a
//     trash root (or deletes it), and writes an audit manifest on storage
//     after every batch so a crashed run resumes without redoing or
//     skipping items.
//
// # The reference rule
//
// A path is deleted only if no retained _metadata anywhere in scope
// references a file at or below it. "Retained" is decided by a fixpoint:
// a _metadata is retained unless the plan deletes its directory, and a
// directory stays in the plan only if no retained _metadata references
// anything inside it. Restored jobs (CLAIM, NO_CLAIM, LEGACY) reference
// files in other jobs' directories by absolute path, so all job dirs and
// savepoints of a scope are planned together. A _metadata that cannot be
// parsed keeps its whole job dir, and because its references are unknown
// it also stops every reference-dependent deletion in the scope (state
// files, completed checkpoints, completed savepoints, retired job dirs);
// deletions that cannot depend on references (incomplete chk-N and
// savepoints past the grace period, HA dirs of retired clusters) go on.
//
// # Savepoint attribution
//
// A savepoint's _metadata does not record its job id. Savepoints are
// grouped by the 6 hex characters of the job id that Flink puts in the
// directory name (savepoint-<6 hex>-<12 hex>). A job restarted from a
// savepoint gets a new job id and so a new group, which can only keep
// more. Two jobs whose ids share the first 6 characters fall into one
// group; retention then keeps the newest K of both together, which is why
// the live restore point and pins are checked independently of the
// ranking.
package cleanup
