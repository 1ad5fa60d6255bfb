// Package e2e_test holds end-to-end tests that crash a real peer (build tag
// realpeers): a JobManager killed in the middle of a maintenance window.
// They live apart from internal/app, whose tests already make it the
// longest package of the suite, so that `go test -p 2 ./...` runs them
// beside it rather than after it. They use the sandbox's failover Flink
// cluster (sandbox/java/run.sh failover-up), which no other test touches,
// so killing it breaks no test running in parallel on the shared clusters.
// The package has test files only: it is no library.
package e2e_test
