package verbs_test

import (
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/a6afc2ce/hermes-hub/verbs"
	"github.com/a6afc2ce/hermes-hub/verbs/internal/verbtest"
)

func TestMachineInfo(t *testing.T) {
	e := verbtest.New(t)
	r := verbtest.OK[verbs.SysMachineInfoResult](e, "sys.machineInfo", verbs.SysMachineInfoArgs{})
	if !strings.HasPrefix(r.OperatingSystem, runtime.GOOS) {
		t.Errorf("operatingSystem %q", r.OperatingSystem)
	}
	if r.CPUCount < 1 || r.TotalMemoryBytes <= 0 || r.Hostname == "" {
		t.Errorf("cpu %d memory %d hostname %q", r.CPUCount, r.TotalMemoryBytes, r.Hostname)
	}
	if len(r.Disks) == 0 {
		t.Fatal("no disks")
	}
	pseudo := []string{"proc", "sysfs", "tmpfs", "devtmpfs", "devpts", "cgroup", "cgroup2", "squashfs", "mqueue", "debugfs", "tracefs", "securityfs"}
	devices := map[string]bool{}
	for _, d := range r.Disks {
		if slices.Contains(pseudo, d.FsType) || d.FsType == "overlay" && d.Name != "/" {
			t.Errorf("pseudo filesystem listed: %+v", d)
		}
		if d.TotalBytes <= 0 || d.FreeBytes < 0 || d.FreeBytes > d.TotalBytes || d.Name == "" {
			t.Errorf("bad disk %+v", d)
		}
		if d.Device != "" && devices[d.Device] {
			t.Errorf("device %s listed twice", d.Device)
		}
		devices[d.Device] = true
	}
	if !slices.IsSortedFunc(r.Disks, func(a, b verbs.DiskInfo) int { return strings.Compare(a.Name, b.Name) }) {
		t.Errorf("disks not sorted by mount point: %+v", r.Disks)
	}
	t.Logf("%s, %d CPUs, %d bytes, disks %+v", r.OperatingSystem, r.CPUCount, r.TotalMemoryBytes, r.Disks)
}
