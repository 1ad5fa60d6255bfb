package flink

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"mime/multipart"
	"net/textproto"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// UploadJar uploads a jar file and returns its jar ID (the last segment of
// the stored file name). Not idempotent: every call stores a new copy.
func (c *Client) UploadJar(ctx context.Context, jarPath string) (string, error) {
	const op = "upload jar"
	if jarPath == "" {
		return "", invalidArgument(op, "jar path is empty")
	}
	if !strings.HasSuffix(jarPath, ".jar") {
		// Flink rejects uploads whose name does not end in .jar.
		return "", invalidArgument(op, "jar path %q must end in .jar", jarPath)
	}
	data, err := os.ReadFile(jarPath)
	if err != nil {
		return "", NewError(op, ErrorReasonInvalidArgument, "cannot read jar "+jarPath, err)
	}
	return c.UploadJarBytes(ctx, filepath.Base(jarPath), data)
}

// UploadJarBytes uploads jar content under the given file name.
func (c *Client) UploadJarBytes(ctx context.Context, name string, jar []byte) (string, error) {
	const op = "upload jar"
	if !strings.HasSuffix(name, ".jar") || strings.ContainsAny(name, "/\\\"\r\n") {
		return "", invalidArgument(op, "jar name %q must be a plain file name ending in .jar", name)
	}
	if len(jar) == 0 {
		return "", invalidArgument(op, "jar %s is empty", name)
	}
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="jarfile"; filename=%q`, name))
	h.Set("Content-Type", "application/x-java-archive")
	part, err := mw.CreatePart(h)
	if err == nil {
		_, err = part.Write(jar)
	}
	if err == nil {
		err = mw.Close()
	}
	if err != nil {
		return "", NewError(op, ErrorReasonInvalidArgument, "cannot build multipart body", err)
	}
	var resp jarUploadResponse
	if err := c.do(ctx, request{op: op, ep: epJarUpload, body: rawBody{contentType: mw.FormDataContentType(), data: buf.Bytes()}}, &resp); err != nil {
		return "", err
	}
	if resp.Status != "success" || resp.Filename == "" {
		return "", NewError(op, ErrorReasonMalformedResponse, fmt.Sprintf("upload answered status %q, filename %q", resp.Status, resp.Filename), nil)
	}
	// The file name is a server path; its last segment is the jar ID.
	return path.Base(strings.ReplaceAll(resp.Filename, "\\", "/")), nil
}

// ListJars returns GET /jars.
func (c *Client) ListJars(ctx context.Context) (JarList, error) {
	var out JarList
	err := c.do(ctx, request{op: "list jars", ep: epJarList}, &out)
	return out, err
}

// DeleteJar deletes an uploaded jar; an unknown jar gives ErrJarNotFound.
func (c *Client) DeleteJar(ctx context.Context, jarID string) error {
	const op = "delete jar"
	if err := checkJarID(op, jarID); err != nil {
		return err
	}
	return c.do(ctx, request{op: op, ep: epJarDelete, args: []string{jarID}, notFound: ErrorReasonJarNotFound}, nil)
}

func checkJarID(op, jarID string) error {
	if jarID == "" || strings.ContainsAny(jarID, "/\\") || jarID == "." || jarID == ".." {
		return invalidArgument(op, "jar ID %q must be the non-empty last segment of an uploaded file name", jarID)
	}
	return nil
}

// RunJarRequest configures POST /jars/{jarid}/run.
type RunJarRequest struct {
	// EntryClass overrides the jar manifest's main class.
	EntryClass string
	// ProgramArgs are passed to main() one by one (no shell splitting).
	ProgramArgs []string
	// Parallelism; 0 leaves the job's/cluster default.
	Parallelism int
	// JobID fixes the new job's ID. Set it to make RunJar idempotent.
	JobID string
	// SavepointPath to restore from; empty starts without state.
	SavepointPath string
	// AllowNonRestoredState skips savepoint state no operator claims.
	AllowNonRestoredState bool
	// RestoreMode for SavepointPath; empty leaves Flink's default
	// (NO_CLAIM).
	RestoreMode RestoreMode
	// FlinkConfiguration overrides job configuration keys.
	FlinkConfiguration map[string]string
}

// RunJarResult identifies the submitted job.
type RunJarResult struct {
	JobID string
	// Reattached is true when a job with RunJarRequest.JobID already
	// existed, so this call submitted nothing. Check its state: it may be a
	// terminal job from an earlier run.
	Reattached bool
}

// RunJar submits a job from an uploaded jar.
func (c *Client) RunJar(ctx context.Context, jarID string, req RunJarRequest) (RunJarResult, error) {
	const op = "run jar"
	if err := checkJarID(op, jarID); err != nil {
		return RunJarResult{}, err
	}
	if req.Parallelism < 0 {
		return RunJarResult{}, invalidArgument(op, "parallelism %d must be positive, or 0 for the default", req.Parallelism)
	}
	if req.JobID != "" {
		if err := checkID(op, "job ID", req.JobID); err != nil {
			return RunJarResult{}, err
		}
	}
	switch req.RestoreMode {
	case "", RestoreClaim, RestoreNoClaim, RestoreLegacy:
	default:
		return RunJarResult{}, invalidArgument(op, "restore mode %q is not one of CLAIM, NO_CLAIM, LEGACY", req.RestoreMode)
	}
	if req.RestoreMode != "" && req.SavepointPath == "" {
		return RunJarResult{}, invalidArgument(op, "restore mode %s needs a savepoint path", req.RestoreMode)
	}
	body := jarRunBody{
		EntryClass:            req.EntryClass,
		ProgramArgsList:       req.ProgramArgs,
		Parallelism:           req.Parallelism,
		JobID:                 req.JobID,
		AllowNonRestoredState: req.AllowNonRestoredState,
		SavepointPath:         req.SavepointPath,
		// Both names carry the mode: claimMode is current, restoreMode the
		// alias that older readers of the body still look at.
		ClaimMode:          req.RestoreMode,
		RestoreMode:        req.RestoreMode,
		FlinkConfiguration: req.FlinkConfiguration,
	}
	var resp jarRunResponse
	err := c.do(ctx, request{op: op, ep: epJarRun, args: []string{jarID}, body: body, notFound: ErrorReasonJarNotFound}, &resp)
	if err != nil {
		if req.JobID != "" && errors.Is(err, ErrDuplicateJob) {
			return RunJarResult{JobID: req.JobID, Reattached: true}, nil
		}
		return RunJarResult{}, err
	}
	if !hex32.MatchString(resp.JobID) {
		return RunJarResult{}, NewError(op, ErrorReasonMalformedResponse, fmt.Sprintf("jobid %q in the response is not a job ID", resp.JobID), nil)
	}
	return RunJarResult{JobID: resp.JobID}, nil
}
