// Package flink is a context-aware client for the Apache Flink JobManager
// REST API (v1), covering what fleet maintenance needs: job and cluster
// inspection, checkpoint statistics, savepoints, stop-with-savepoint, cancel,
// savepoint disposal and jar upload/run.
//
// Supported Flink versions are 1.20 and 2.x (2.0, 2.1/2.2 and the current
// master snapshot); the contract test checks every endpoint and JSON field the
// client uses against the OpenAPI specs of those versions. Unknown response
// fields are ignored, so newer servers keep working.
//
// # Errors
//
// Every failure is an *Error carrying a Reason (one of the ErrorReason…
// constants) and a retryable flag. Use IsRetryable and Reason, or errors.Is
// with the Err… sentinels (errors.Is(err, ErrJobNotFound)). Transport errors
// still unwrap to their cause, so errors.Is(err, context.Canceled) works.
//
// # Idempotency
//
// What is safe to repeat, and what is not:
//
//   - GET endpoints are read-only and always safe to repeat.
//   - TriggerSavepoint and StopWithSavepoint send a caller-chosen trigger ID
//     ("triggerId" in the request body, accepted by every supported version; the client
//     generates one when the caller gives none). Before posting, the client
//     asks Flink for the status of that trigger ID; if Flink knows it (in
//     progress or completed), the client re-attaches instead of posting again.
//     A POST that fails with a retryable error, or with 409 / "already in
//     progress", is followed by the same status probe. Flink itself also
//     ignores a second POST with a trigger ID it still has in its operation
//     cache. Savepoints and stops share one cache keyed by (job ID, trigger
//     ID), so use different trigger IDs for the two.
//   - That cache is bounded: Flink forgets completed operations after
//     rest.async.store-duration (default 5 minutes) and on JobManager
//     failover. A retry after that window cannot re-attach and will start a
//     new savepoint (for stop: it fails with job-not-running, since the job is
//     already stopped). Callers that need exactly-once across long gaps must
//     record the resulting savepoint location themselves.
//   - Relative target directories are rejected before any request: Flink
//     would resolve them on the JobManager's local disk.
//   - A completed operation that failed is re-attached too: retrying with the
//     same trigger ID returns the same failure. To try again, use a new ID.
//   - CancelJob is idempotent in effect: cancelling a job that is already
//     CANCELED returns nil; cancelling a job that ended otherwise returns
//     ErrJobNotRunning.
//   - RunJar is idempotent only when RunJarRequest.JobID is set: Flink rejects a
//     second submission with the same job ID, and the client reports that as
//     success with Reattached set. Without a job ID every call starts a new job.
//   - UploadJar is not idempotent: each call stores a new jar with a new ID.
//     DeleteJar of an unknown jar returns ErrJarNotFound.
//   - DisposeSavepoint is not idempotent on the Flink side (no trigger ID in
//     the API): each call starts a new disposal. Disposing a path that no
//     longer exists fails with ErrSavepointNotFound, which callers may treat
//     as done.
package flink
