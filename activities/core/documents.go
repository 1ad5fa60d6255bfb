package core

import (
	"context"
	"errors"

	"github.com/flinkmaint/flinkmaint/internal/storage"
)

// Documents writes the documents runs leave on storage (reports, plans,
// samples).
type Documents struct {
	Storage Storage
}

// WriteDocument writes a small document atomically: to a temporary name,
// then renamed over the old version, so a reader never sees half of it.
func (docs Documents) WriteDocument(ctx context.Context, in WriteDocumentInput) (WriteDocumentResult, error) {
	if docs.Storage == nil {
		return WriteDocumentResult{}, NonRetryable(ErrTypeStorage, "worker has no storage configured")
	}
	fs, p, err := docs.Storage.Resolve(ctx, in.Path)
	if err != nil {
		return WriteDocumentResult{}, Classify("resolve "+in.Path, err)
	}
	if err := fs.MkdirAll(ctx, storage.ParentOf(p)); err != nil {
		return WriteDocumentResult{}, Classify("create "+storage.ParentOf(p), err)
	}
	tmp := p + ".tmp"
	_ = fs.Remove(ctx, tmp) // a leftover from a crashed attempt
	if err := fs.WriteFile(ctx, tmp, in.Content); err != nil {
		return WriteDocumentResult{}, Classify("write "+tmp, err)
	}
	if err := fs.Remove(ctx, p); err != nil && !errors.Is(err, storage.ErrNotFound) {
		return WriteDocumentResult{}, Classify("replace "+p, err)
	}
	if err := fs.Rename(ctx, tmp, p); err != nil {
		return WriteDocumentResult{}, Classify("rename "+tmp, err)
	}
	return WriteDocumentResult{Path: in.Path, Bytes: len(in.Content)}, nil
}

// WriteDocumentInput writes a small document (manifest, report) durably.
type WriteDocumentInput struct {
	Path    string
	Content []byte
}

// WriteDocumentResult echoes where it was written.
type WriteDocumentResult struct {
	Path  string
	Bytes int
}
