package executor

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// ErrorCode is the machine-readable class of a failed verb. Clients branch on
// it; the accompanying message is for people.
type ErrorCode string

// The error codes a result may carry.
const (
	CodeUnknownVerb      ErrorCode = "unknown_verb"
	CodeInvalidEnvelope  ErrorCode = "invalid_envelope"
	CodeInvalidArguments ErrorCode = "invalid_arguments"
	CodeNotFound         ErrorCode = "not_found"
	CodeAlreadyExists    ErrorCode = "already_exists"
	CodeConflict         ErrorCode = "conflict" // not the version the call was based on (fs.edit's expectedSha256)
	CodeNotADirectory    ErrorCode = "not_a_directory"
	CodeIsADirectory     ErrorCode = "is_a_directory"
	CodeForbiddenPath    ErrorCode = "forbidden_path"
	CodeTooLarge         ErrorCode = "too_large"
	CodeTimeout          ErrorCode = "timeout"
	CodeCanceled         ErrorCode = "cancelled"
	CodeForbidden        ErrorCode = "forbidden"
	// CodeConfirmationRequired: the caller's role holds the verb for
	// confirmation, which this surface cannot ask for.
	CodeConfirmationRequired ErrorCode = "confirmation_required"
	CodeIOError              ErrorCode = "io_error"
	CodeInternal             ErrorCode = "internal"
)

// codes are the error codes a result may carry.
var codes = []ErrorCode{
	CodeUnknownVerb, CodeInvalidEnvelope, CodeInvalidArguments,
	CodeNotFound, CodeAlreadyExists, CodeConflict, CodeNotADirectory,
	CodeIsADirectory, CodeForbiddenPath,
	CodeTooLarge, CodeTimeout, CodeCanceled, CodeForbidden, CodeConfirmationRequired,
	CodeIOError, CodeInternal,
}

// Codes lists every error code a result may carry.
func Codes() []string {
	out := make([]string, len(codes))
	for i, c := range codes {
		out[i] = string(c)
	}
	return out
}

// Known reports whether c is one of Codes.
func (c ErrorCode) Known() bool { return slices.Contains(codes, c) }

// Error is a verb failure with a code and a message meant for the person or
// agent that sent the verb. Verbs return it (usually through Errorf) so the
// executor can turn it into a result; any other error becomes io_error.
type Error struct {
	Code    ErrorCode
	Message string
	Err     error // optional cause, not shown to clients
}

func (e *Error) Error() string { return e.Message }
func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with the given code and a formatted message.
// A %w verb in format records the cause for errors.Is without changing the
// message.
func Errorf(code ErrorCode, format string, args ...any) *Error {
	err := fmt.Errorf(format, args...)
	return &Error{Code: code, Message: err.Error(), Err: errors.Unwrap(err)}
}

// ErrorFrom classifies err into a code and message. Context expiry becomes
// timeout or cancelled; an *Error keeps its own code; anything else is io_error.
func ErrorFrom(err error) *Error {
	var e *Error
	switch {
	case errors.As(err, &e):
		return e
	case errors.Is(err, context.DeadlineExceeded):
		return &Error{Code: CodeTimeout, Message: "Timed out: " + err.Error(), Err: err}
	case errors.Is(err, context.Canceled):
		return &Error{Code: CodeCanceled, Message: "Cancelled before it finished", Err: err}
	default:
		return &Error{Code: CodeIOError, Message: err.Error(), Err: err}
	}
}
