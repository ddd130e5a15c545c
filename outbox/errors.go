package outbox

import (
	"errors"
	"fmt"
	"time"
)

// Errors a Store returns; match them with errors.Is.
var (
	// ErrNotFound: no entry has that id (never enqueued, purged or pruned).
	ErrNotFound = errors.New("outbox entry not found")
	// ErrWrongState: the operation does not apply to the entry's state, such
	// as requeueing an entry that is not a dead letter.
	ErrWrongState = errors.New("outbox entry is in the wrong state")
	// ErrClosed: the dispatcher has been shut down.
	ErrClosed = errors.New("outbox is shut down")
)

// RetryAfterError is a send the platform asked to repeat after a delay (a
// 429 with retry_after). It is not a failed attempt.
type RetryAfterError struct {
	After time.Duration
	Err   error
}

func (e *RetryAfterError) Error() string {
	return fmt.Sprintf("rate limited, retry after %s: %v", e.After, e.Err)
}

func (e *RetryAfterError) Unwrap() error { return e.Err }

// PermanentError is a send that can never succeed (bad request, blocked,
// chat not found); the entry becomes a dead letter at once.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return "permanent: " + e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }

// TransientError is a send that may succeed later (5xx, timeout, connection
// refused); it is retried with backoff.
type TransientError struct{ Err error }

func (e *TransientError) Error() string { return "transient: " + e.Err.Error() }
func (e *TransientError) Unwrap() error { return e.Err }

func orUnknown(err error) error {
	if err == nil {
		return errors.New("unspecified send failure")
	}
	return err
}

// RetryAfter classifies err as a rate limit: retry this target after d.
// The result is never nil, even for a nil err.
func RetryAfter(d time.Duration, err error) error {
	return &RetryAfterError{After: d, Err: orUnknown(err)}
}

// Permanent classifies err as a failure that retrying cannot fix.
// The result is never nil, even for a nil err.
func Permanent(err error) error { return &PermanentError{Err: orUnknown(err)} }

// Transient classifies err as a failure worth retrying with backoff. An
// unclassified error is treated the same way. The result is never nil.
func Transient(err error) error { return &TransientError{Err: orUnknown(err)} }

// RetryAfterOf reports the delay of a rate-limit error anywhere in err's chain.
func RetryAfterOf(err error) (time.Duration, bool) {
	var ra *RetryAfterError
	if errors.As(err, &ra) {
		return ra.After, true
	}
	return 0, false
}

// IsPermanent reports whether err's chain holds a PermanentError (and no
// RetryAfterError, which takes precedence).
func IsPermanent(err error) bool { return classify(err) == classPermanent }

// IsTransient reports whether err would be retried with backoff: any non-nil
// error that is neither a rate limit nor permanent.
func IsTransient(err error) bool { return classify(err) == classTransient }

type errClass int

const (
	classNone errClass = iota
	classRetryAfter
	classPermanent
	classTransient
)

// classify orders the classes: a rate limit wins over permanent, permanent
// over transient; anything else non-nil is transient.
func classify(err error) errClass {
	if err == nil {
		return classNone
	}
	var ra *RetryAfterError
	if errors.As(err, &ra) {
		return classRetryAfter
	}
	var pe *PermanentError
	if errors.As(err, &pe) {
		return classPermanent
	}
	return classTransient
}
