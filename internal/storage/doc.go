// Package storage is the one file-system port flinkmaint uses for checkpoint,
// savepoint and HA storage, with an HDFS implementation (colinmarc/hdfs/v2)
// and a local one (file:// URIs and tests).
//
// Paths are URIs: hdfs://namenode:port/path, hdfs://nameservice/path,
// file:///path or a plain /path, which belongs to the file system it is
// given to. Every returned FileInfo.Path is fully qualified, so it compares
// equal to the absolute references Flink writes into _metadata files.
//
// Every write, rename and delete passes a Guard first: the target must lie
// strictly under one of the configured roots. Errors carry a kind that
// errors.Is recognises (ErrNotFound, ErrNamespaceQuotaExceeded, ...).
package storage
