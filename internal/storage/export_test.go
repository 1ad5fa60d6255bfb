package storage

// SetAfterReplicating makes h call f when a file's first completion is
// answered "replication in progress"; f runs inside the write, with the
// file open and its last block committed on the namenode that answered.
func SetAfterReplicating(h *HDFS, f func()) { h.afterReplicating = f }
