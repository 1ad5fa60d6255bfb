package flink

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strings"
)

// Error reasons. Each is a stable string that activities can copy into a
// Temporal application error type. The non-retryable ones describe a state
// that repeating the same request will not change.
const (
	// Non-retryable.
	ErrorReasonJobNotFound            = "FlinkJobNotFound"
	ErrorReasonJobNotRunning          = "FlinkJobNotRunning"
	ErrorReasonCheckpointingDisabled  = "FlinkCheckpointingDisabled"
	ErrorReasonInvalidTargetDirectory = "FlinkInvalidTargetDirectory"
	ErrorReasonStorageQuotaExceeded   = "FlinkStorageQuotaExceeded"
	ErrorReasonStorageAccessDenied    = "FlinkStorageAccessDenied"
	ErrorReasonSavepointNotFound      = "FlinkSavepointNotFound"
	ErrorReasonOperationNotFound      = "FlinkOperationNotFound"
	ErrorReasonJarNotFound            = "FlinkJarNotFound"
	ErrorReasonDuplicateJob           = "FlinkDuplicateJob"
	ErrorReasonBadRequest             = "FlinkBadRequest"
	ErrorReasonInvalidArgument        = "FlinkInvalidArgument"
	ErrorReasonEndpointNotFound       = "FlinkEndpointNotFound"
	ErrorReasonUnauthorized           = "FlinkUnauthorized"
	ErrorReasonMalformedResponse      = "FlinkMalformedResponse"
	ErrorReasonTLS                    = "FlinkTLS"
	ErrorReasonCanceled               = "FlinkRequestCanceled"

	// Retryable.
	ErrorReasonUnavailable         = "FlinkUnavailable"
	ErrorReasonTimeout             = "FlinkTimeout"
	ErrorReasonServerError         = "FlinkServerError"
	ErrorReasonOperationFailed     = "FlinkOperationFailed"
	ErrorReasonOperationInProgress = "FlinkOperationInProgress"
	ErrorReasonTasksNotReady       = "FlinkTasksNotReady"
)

var retryableReasons = map[string]bool{
	ErrorReasonUnavailable:         true,
	ErrorReasonTimeout:             true,
	ErrorReasonServerError:         true,
	ErrorReasonOperationFailed:     true,
	ErrorReasonOperationInProgress: true,
	ErrorReasonTasksNotReady:       true,
}

// reasonSentinel lets errors.Is match an *Error by its reason.
type reasonSentinel string

func (s reasonSentinel) Error() string { return "flink: " + string(s) }

// Sentinels for errors.Is; an *Error matches the one for its Reason.
var (
	ErrJobNotFound            error = reasonSentinel(ErrorReasonJobNotFound)
	ErrJobNotRunning          error = reasonSentinel(ErrorReasonJobNotRunning)
	ErrCheckpointingDisabled  error = reasonSentinel(ErrorReasonCheckpointingDisabled)
	ErrInvalidTargetDirectory error = reasonSentinel(ErrorReasonInvalidTargetDirectory)
	ErrStorageQuotaExceeded   error = reasonSentinel(ErrorReasonStorageQuotaExceeded)
	ErrStorageAccessDenied    error = reasonSentinel(ErrorReasonStorageAccessDenied)
	ErrSavepointNotFound      error = reasonSentinel(ErrorReasonSavepointNotFound)
	ErrOperationNotFound      error = reasonSentinel(ErrorReasonOperationNotFound)
	ErrJarNotFound            error = reasonSentinel(ErrorReasonJarNotFound)
	ErrDuplicateJob           error = reasonSentinel(ErrorReasonDuplicateJob)
	ErrBadRequest             error = reasonSentinel(ErrorReasonBadRequest)
	ErrInvalidArgument        error = reasonSentinel(ErrorReasonInvalidArgument)
	ErrEndpointNotFound       error = reasonSentinel(ErrorReasonEndpointNotFound)
	ErrUnauthorized           error = reasonSentinel(ErrorReasonUnauthorized)
	ErrMalformedResponse      error = reasonSentinel(ErrorReasonMalformedResponse)
	ErrTLS                    error = reasonSentinel(ErrorReasonTLS)
	ErrCanceled               error = reasonSentinel(ErrorReasonCanceled)
	ErrUnavailable            error = reasonSentinel(ErrorReasonUnavailable)
	ErrTimeout                error = reasonSentinel(ErrorReasonTimeout)
	ErrServerError            error = reasonSentinel(ErrorReasonServerError)
	ErrOperationFailed        error = reasonSentinel(ErrorReasonOperationFailed)
	ErrOperationInProgress    error = reasonSentinel(ErrorReasonOperationInProgress)
	ErrTasksNotReady          error = reasonSentinel(ErrorReasonTasksNotReady)
)

// Error is every error the client returns.
type Error struct {
	// Op names the client call, e.g. "trigger savepoint".
	Op string
	// Reason is one of the ErrorReason… constants.
	Reason string
	// Retryable tells whether repeating the call may succeed.
	Retryable bool
	// Method and URL of the request; empty for argument errors.
	Method, URL string
	// StatusCode is the HTTP status, 0 when no response arrived.
	StatusCode int
	// Message is Flink's error text (first "errors" entry, a failure
	// cause, or a truncated non-JSON body).
	Message string
	// Err is the underlying cause, if any.
	Err error
}

// NewError returns an *Error with the retryable flag implied by reason.
func NewError(op, reason, message string, cause error) *Error {
	return &Error{Op: op, Reason: reason, Retryable: retryableReasons[reason], Message: message, Err: cause}
}

func invalidArgument(op, format string, args ...any) *Error {
	return NewError(op, ErrorReasonInvalidArgument, fmt.Sprintf(format, args...), nil)
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("flink: ")
	b.WriteString(e.Op)
	if e.Method != "" {
		fmt.Fprintf(&b, " (%s %s", e.Method, e.URL)
		if e.StatusCode != 0 {
			fmt.Fprintf(&b, " -> %d", e.StatusCode)
		}
		b.WriteString(")")
	}
	fmt.Fprintf(&b, ": %s", e.Reason)
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if e.Err != nil && (e.Message == "" || !strings.Contains(e.Message, e.Err.Error())) {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Is matches the Err… sentinel of e's reason.
func (e *Error) Is(target error) bool {
	s, ok := target.(reasonSentinel)
	return ok && string(s) == e.Reason
}

// IsRetryable reports whether err may go away on retry. Errors that are not
// from this package count as retryable, except a canceled context.
func IsRetryable(err error) bool {
	if err == nil {
		return false
	}
	var fe *Error
	if errors.As(err, &fe) {
		return fe.Retryable
	}
	return !errors.Is(err, context.Canceled)
}

// Reason returns the ErrorReason… of err, or "" when err is not from this
// package.
func Reason(err error) string {
	var fe *Error
	if errors.As(err, &fe) {
		return fe.Reason
	}
	return ""
}

// maxMessage bounds messages built from response bodies and stack traces.
const maxMessage = 512

func truncate(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && (s[cut]&0xC0) == 0x80 { // keep UTF-8 intact
		cut--
	}
	return s[:cut] + fmt.Sprintf("… (%d bytes truncated)", len(s)-cut)
}

// classifyText maps Flink exception text to a reason; "" when nothing
// specific matched. The text may be a REST error message or a failure cause
// with its stack trace (including "Caused by:" chains).
func classifyText(text string) string {
	t := strings.ToLower(text)
	has := func(subs ...string) bool {
		for _, s := range subs {
			if strings.Contains(t, s) {
				return true
			}
		}
		return false
	}
	switch {
	case has("nsquotaexceededexception", "dsquotaexceededexception", "quotaexceededexception", "quota (directories and files)", "diskspace quota"):
		return ErrorReasonStorageQuotaExceeded
	case has("accesscontrolexception", "permission denied"):
		return ErrorReasonStorageAccessDenied
	case has("checkpointing is not enabled", "checkpointing has not been enabled", "checkpointing has been disabled", "checkpointing is disabled", "checkpointing disabled"):
		return ErrorReasonCheckpointingDisabled
	case has("no savepoint directory configured", "must be provided", "relative path", "no filesystem for scheme",
		"unsupportedfilesystemschemeexception", "could not find a file system implementation", "cannot use location without scheme",
		"invalid savepoint directory", "invalid target directory", "not a valid file uri", "parentnotdirectoryexception"):
		return ErrorReasonInvalidTargetDirectory
	case has("flinkjobnotfoundexception", "could not find flink job") ||
		(has("job ") && has(" not found")) || has("job could not be found"):
		return ErrorReasonJobNotFound
	case has("flinkjobterminatedwithoutcancellationexception", "already reached another terminal state",
		"is not running", "job is not in state running", "job has already finished", "job is already finished",
		"not running anymore", "has been already terminated", "jobmaster is not running"):
		return ErrorReasonJobNotRunning
	case has("not all required tasks are currently running", "is not being executed at the moment", "tasks are not ready"):
		return ErrorReasonTasksNotReady
	case has("duplicatejobsubmissionexception", "has already been submitted"):
		return ErrorReasonDuplicateJob
	case has("there is no savepoint operation", "there is no checkpoint operation", "operation not found under key",
		"unknownoperationkeyexception", "no ongoing savepoints", "savepoint not found. savepoint trigger id",
		"there is no savepoint disposal operation"):
		return ErrorReasonOperationNotFound
	case has("cannot find meta data file", "savepoint path does not exist", "filenotfoundexception", "no such file or directory"):
		return ErrorReasonSavepointNotFound
	case has("could not find jar", "jar file", "does not exist") && has("jar"):
		return ErrorReasonJarNotFound
	case has("leader election", "leader is not available", "no leader", "leaderretrievalexception"):
		return ErrorReasonUnavailable
	case has("already in progress", "is already being processed", "already a savepoint", "stop-with-savepoint is already"):
		return ErrorReasonOperationInProgress
	}
	return ""
}

// classifyTransport maps an error from http.Client.Do (or reading a body).
func classifyTransport(ctx context.Context, err error) (reason string) {
	var (
		unknownAuthority x509.UnknownAuthorityError
		hostname         x509.HostnameError
		certInvalid      x509.CertificateInvalidError
		netErr           net.Error
	)
	switch {
	case errors.Is(ctx.Err(), context.Canceled):
		return ErrorReasonCanceled
	case errors.Is(ctx.Err(), context.DeadlineExceeded), errors.Is(err, context.DeadlineExceeded):
		return ErrorReasonTimeout
	case errors.As(err, &unknownAuthority), errors.As(err, &hostname), errors.As(err, &certInvalid):
		return ErrorReasonTLS
	case errors.As(err, &netErr) && netErr.Timeout():
		return ErrorReasonTimeout
	case strings.Contains(err.Error(), "tls: "), strings.Contains(err.Error(), "gave HTTP response to HTTPS client"):
		return ErrorReasonTLS
	}
	return ErrorReasonUnavailable
}
