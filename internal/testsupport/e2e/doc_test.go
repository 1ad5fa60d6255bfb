// Package e2e_test holds end-to-end tests that crash or fail over a real
// peer (build tag realpeers): a JobManager killed in the middle of a
// maintenance window, NameNodes failed over under a window on kerberized
// HDFS, one of three worker processes killed mid-run. They live apart from
// internal/app, whose tests already make it the longest package of the
// suite, so that `go test -p 2 ./...` runs them beside it rather than after
// it. They use peers no other test kills: the sandbox's failover Flink
// cluster (sandbox/java/run.sh failover-up), the secure Flink cluster
// (secure-flink-up) under the NameNode failover lock, and worker processes
// of their own. The package has test files only: it is no library.
package e2e_test
