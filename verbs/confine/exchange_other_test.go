//go:build !linux

package confine_test

import "errors"

// exchange is not available here: swappers fall back to three renames.
func exchange(a, b string) error { return errors.ErrUnsupported }
