package verbs

import "errors"

// dupFD and syncFD are not available here: the workspace does not open on
// Windows (see internal/posix), so they are never reached.
func dupFD(int) (int, error) { return -1, errors.ErrUnsupported }

func syncFD(int) error { return errors.ErrUnsupported }
