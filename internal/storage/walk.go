package storage

import (
	"context"
	"errors"
)

// walkFS is what walk needs from an implementation.
type walkFS interface {
	Stat(ctx context.Context, path string) (FileInfo, error)
	List(ctx context.Context, dir string, batchSize int, fn ListFunc) error
}

// walk is the shared depth-first walk over List: one batch per depth level
// is held in memory, never a whole directory.
func walk(ctx context.Context, f walkFS, root string, batchSize int, fn WalkFunc) error {
	info, err := f.Stat(ctx, root)
	if err != nil {
		return err
	}
	err = walkFrom(ctx, f, info, batchSize, fn)
	var ue userError
	if errors.As(err, &ue) {
		return ue.err
	}
	return err
}

// userError carries an error returned by the WalkFunc through List, so it
// is never mistaken for a vanished directory.
type userError struct{ err error }

func (u userError) Error() string { return u.err.Error() }

func walkFrom(ctx context.Context, f walkFS, info FileInfo, batchSize int, fn WalkFunc) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := fn(info); err != nil {
		if errors.Is(err, SkipDir) {
			return nil
		}
		return userError{err}
	}
	if !info.IsDir {
		return nil
	}
	err := f.List(ctx, info.Path, batchSize, walkBatch(ctx, f, batchSize, fn))
	var ue userError
	if !errors.As(err, &ue) && errors.Is(err, ErrNotFound) {
		// The directory vanished between being listed and being opened.
		return nil
	}
	return err
}

// walkBatch is the ListFunc that walks each entry of a listed dir.
func walkBatch(ctx context.Context, f walkFS, batchSize int, fn WalkFunc) ListFunc {
	return func(batch []FileInfo) error {
		// Copy: List reuses the slice, and the walk lists before it returns.
		entries := append([]FileInfo(nil), batch...)
		for _, e := range entries {
			if err := walkFrom(ctx, f, e, batchSize, fn); err != nil {
				return err
			}
		}
		return nil
	}
}

// WalkFrom walks the subtree of an entry the caller already has (from a
// listing), saving the Stat that Walk starts with: one call fewer per
// subtree, which adds up over thousands of chk-N directories.
func WalkFrom(ctx context.Context, f FileSystem, info FileInfo, fn WalkFunc) error {
	err := walkFrom(ctx, f, info, 0, fn)
	var ue userError
	if errors.As(err, &ue) {
		return ue.err
	}
	return err
}
