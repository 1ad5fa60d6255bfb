package workflows

import (
	"errors"
	"strings"

	"go.temporal.io/sdk/temporal"
)

// maxErrorText bounds the text of one error in a decision, a note, a
// report or a job's progress.
const maxErrorText = 400

// maxFailureText bounds the message a workflow fails with: it may say
// what became of a job beside a cause errorText bounded.
const maxFailureText = 2 * maxErrorText

// errorText is the one place workflow code turns an error into text a
// person reads: what went wrong, said once, in at most maxErrorText bytes.
//
// Temporal's errors nest, and each layer's Error() repeats the layers
// below it: a child workflow error wraps an activity error, which wraps
// the application error the activity returned, whose message already
// holds its cause, which the SDK carries again as one application error
// per Go wrapper, each with a "(type: …, retryable: …)" tail. errorText
// walks the chain, takes each layer's own message (the SDK's tails and
// the bare "activity error" labels dropped), leaves out what an outer
// layer already said and joins the rest with ": ". The type of the
// innermost non-retryable application error (the reason an activity or
// workflow gave) follows in parentheses unless the text names it.
func errorText(err error) string {
	return boundedErrorText(err, "", maxErrorText)
}

// errorTextFor is errorText for the message of a new application error
// of type errType, which a workflow fails with: the text leaves out the
// type, which the error's own Error() names, and is bounded by
// maxFailureText.
func errorTextFor(err error, errType string) string {
	return boundedErrorText(err, errType, maxFailureText)
}

func boundedErrorText(err error, errType string, limit int) string {
	if err == nil {
		return ""
	}
	var segs []string
	for e := err; e != nil; e = errors.Unwrap(e) {
		for _, piece := range splitSDKTails(ownMessage(e)) {
			segs = appendSaid(segs, errorSegments(piece))
		}
	}
	text := strings.Join(segs, ": ")
	if text == "" {
		text = strings.Join(strings.Fields(err.Error()), " ")
	}
	if t := rootErrorType(err); t != "" && t != errType && !strings.Contains(text, t) {
		suffix := " (" + t + ")"
		return clip(text, limit-len(suffix)) + suffix
	}
	return clip(text, limit)
}

// ownMessage is what one layer of an error chain says beyond its cause.
func ownMessage(e error) string {
	switch v := e.(type) {
	case *temporal.ApplicationError:
		return v.Message()
	case *temporal.TimeoutError:
		if v.Message() == "" {
			return "timeout"
		}
		return v.Message()
	case *temporal.CanceledError:
		return "canceled"
	case *temporal.ActivityError, *temporal.ChildWorkflowExecutionError:
		// Their own text is the activity or workflow type and event IDs.
		return ""
	}
	s := e.Error()
	if c := errors.Unwrap(e); c != nil {
		s = strings.TrimSuffix(s, c.Error())
	}
	return s
}

// sdkTail opens what the SDK appends to an error's message in Error():
// "(type: T, retryable: B)" for application errors, "(type: T,
// scheduledEventID: …)" for activity errors, "(type: T, workflowID: …)"
// for child workflow errors. A message built from a cause's Error() holds
// them in the middle.
const sdkTail = " (type: "

// splitSDKTails cuts s at each SDK tail and drops the tails.
func splitSDKTails(s string) []string {
	var pieces []string
	for {
		i := strings.Index(s, sdkTail)
		if i < 0 {
			break
		}
		end := closingParen(s, i+1)
		if end < 0 {
			break
		}
		pieces = append(pieces, s[:i])
		s = s[end+1:]
	}
	return append(pieces, s)
}

// closingParen is the index of the parenthesis that closes the one at
// open, or -1.
func closingParen(s string, open int) int {
	depth := 0
	for i := open; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

// errorSegments splits a piece of a message at ": ", with its white space
// folded and the SDK's wrapping labels left out.
func errorSegments(piece string) []string {
	var segs []string
	for _, s := range strings.Split(strings.Join(strings.Fields(piece), " "), ": ") {
		s = strings.Trim(s, ": ")
		if s == "" || isSDKLabel(s) {
			continue
		}
		segs = append(segs, s)
	}
	return segs
}

// isSDKLabel: the message the SDK gives a layer that only wraps.
func isSDKLabel(s string) bool {
	switch s {
	case "activity error", "child workflow execution error", "workflow execution error":
		return true
	}
	return false
}

// appendSaid adds next to segs unless segs already say it; when next
// starts with what segs end with (a prefix added twice, once by the
// workflow and once by the activity), only the rest is added.
func appendSaid(segs, next []string) []string {
	if len(next) == 0 {
		return segs
	}
	if strings.Contains(strings.Join(segs, ": "), strings.Join(next, ": ")) {
		return segs
	}
	for k := min(len(segs), len(next)); k > 0; k-- {
		if equalStrings(segs[len(segs)-k:], next[:k]) {
			return append(segs, next[k:]...)
		}
	}
	return append(segs, next...)
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// rootErrorType is the type of the innermost non-retryable application
// error in err's chain: the reason an activity or workflow gave. Errors
// the SDK built from plain Go errors are retryable and typed by their Go
// type, which says nothing to a person.
func rootErrorType(err error) string {
	t := ""
	for e := err; e != nil; e = errors.Unwrap(e) {
		if appErr, ok := e.(*temporal.ApplicationError); ok && appErr.NonRetryable() && appErr.Type() != "" {
			t = appErr.Type()
		}
	}
	return t
}
