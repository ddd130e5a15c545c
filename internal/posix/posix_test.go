package posix_test

import (
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/a6afc2ce/hermes-hub/internal/posix"
)

func TestSupported(t *testing.T) {
	err := posix.Supported()
	if runtime.GOOS == "windows" {
		if err == nil || !strings.Contains(err.Error(), "not supported on Windows") {
			t.Fatalf("Supported() = %v, want a refusal naming Windows", err)
		}
		return
	}
	if err != nil {
		t.Fatalf("Supported() = %v", err)
	}
	dir := t.TempDir()
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := posix.Mkdirat(int(d.Fd()), "sub", 0o700); err != nil {
		t.Fatal(err)
	}
	fd, err := posix.Openat(int(d.Fd()), "sub", posix.O_RDONLY|posix.O_DIRECTORY|posix.O_NOFOLLOW|posix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	var st posix.Stat_t
	if err := posix.Fstat(fd, &st); err != nil || st.Mode&posix.S_IFMT != posix.S_IFDIR {
		t.Errorf("Fstat: %v, mode %o", err, st.Mode)
	}
	posix.Close(fd)
}
