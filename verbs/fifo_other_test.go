//go:build !unix

package verbs_test

import "testing"

func mkfifo(t *testing.T, _ string) {
	t.Helper()
	t.Skip("needs named pipes (mkfifo), which this system does not have")
}
