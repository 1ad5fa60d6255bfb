// Package checkpoint reads Flink checkpoint and savepoint _metadata files
// (metadata format versions 2 to 6, Flink 1.3 to 2.3) and reports every file
// they reference, so a cleaner never deletes state a retained checkpoint or
// savepoint still needs.
//
// The reader is pure: ParseBytes works on the file's bytes plus the location
// of the _metadata (needed to resolve relative handles); ParseReader and
// ParseFile only add reading. It fails closed: an unknown version or tag,
// truncated input, or any count, length or value outside what Flink writes
// yields a *FormatError (with the byte offset, what was expected and what was
// found) that unwraps to one of the Err* sentinels, and never a partial
// result. Counts are checked against the remaining input before anything is
// allocated, and handle nesting is bounded.
//
// Referenced files: FileStateHandle (absolute), RelativeFileStateHandle
// (resolved against the directory holding _metadata) and
// SegmentFileStateHandle (file merging; byte ranges kept) wherever they
// occur: operator state, key-group state, incremental RocksDB meta, shared
// and private files, changelog (DSTL) files and unaligned-checkpoint channel
// state. ByteStreamStateHandles hold their data inline; they are counted in
// Metadata.Inline and never reported as files even though their names look
// like paths. Paths are normalised by NormalizePath; Files is sorted by path.
//
// The V4+ trailer (Java-serialized CheckpointProperties) is checked
// structurally and decoded into Properties, which tells a checkpoint from a
// savepoint.
package checkpoint
