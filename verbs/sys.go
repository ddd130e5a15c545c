package verbs

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"

	"github.com/shirou/gopsutil/v3/cpu"
	"github.com/shirou/gopsutil/v3/disk"
	"github.com/shirou/gopsutil/v3/host"
	"github.com/shirou/gopsutil/v3/mem"
)

// pseudoFS are filesystem types that hold no disk space worth reporting.
var pseudoFS = map[string]bool{
	"autofs": true, "binfmt_misc": true, "bpf": true, "cgroup": true, "cgroup2": true,
	"configfs": true, "debugfs": true, "devfs": true, "devpts": true, "devtmpfs": true,
	"efivarfs": true, "fdescfs": true, "fusectl": true, "hugetlbfs": true, "mqueue": true,
	"nsfs": true, "nfsd": true, "proc": true, "procfs": true, "pstore": true, "ramfs": true,
	"rpc_pipefs": true, "securityfs": true, "selinuxfs": true, "squashfs": true, "sysfs": true,
	"tmpfs": true, "tracefs": true, "overlay": true, "aufs": true, "fuse.lxcfs": true,
	"fuse.gvfsd-fuse": true, "fuse.portal": true, "fuse.snapfuse": true, "iso9660": true,
	"none": true,
}

// MachineInfo implements sys.machineInfo.
func (s *Set) MachineInfo(ctx context.Context, _ SysMachineInfoArgs) (SysMachineInfoResult, error) {
	var res SysMachineInfoResult
	hi, err := host.InfoWithContext(ctx)
	if err != nil {
		return res, fmt.Errorf("read host information: %w", err)
	}
	res.OperatingSystem = describeOS(hi)
	res.Hostname = hi.Hostname
	res.UptimeSeconds = clampInt64(hi.Uptime)
	res.CPUCount = runtime.NumCPU()
	if n, err := cpu.CountsWithContext(ctx, true); err == nil && n > 0 {
		res.CPUCount = n // logical CPUs of the machine, not only those this process may use
	}
	vm, err := mem.VirtualMemoryWithContext(ctx)
	if err != nil {
		return res, fmt.Errorf("read memory information: %w", err)
	}
	res.TotalMemoryBytes = clampInt64(vm.Total)
	res.Disks, err = disks(ctx)
	if err != nil {
		return res, err
	}
	return res, nil
}

// describeOS formats "linux debian 12.2 (kernel 6.1.0)", leaving out what
// is unknown.
func describeOS(hi *host.InfoStat) string {
	parts := []string{cmp.Or(hi.OS, runtime.GOOS)}
	for _, p := range []string{hi.Platform, hi.PlatformVersion} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	s := strings.Join(parts, " ")
	if hi.KernelVersion != "" {
		s += " (kernel " + hi.KernelVersion + ")"
	}
	return s
}

// disks lists mounted disk filesystems: pseudo filesystems are left out
// (an overlay is kept when it is the root, as in a container), each device
// is listed once at its shortest mount point, sorted by mount point.
func disks(ctx context.Context) ([]DiskInfo, error) {
	parts, err := disk.PartitionsWithContext(ctx, true)
	if err != nil && len(parts) == 0 {
		return nil, fmt.Errorf("list mounted filesystems: %w", err)
	}
	slices.SortStableFunc(parts, func(a, b disk.PartitionStat) int {
		return cmp.Or(cmp.Compare(len(a.Mountpoint), len(b.Mountpoint)), cmp.Compare(a.Mountpoint, b.Mountpoint))
	})
	seen := map[string]bool{}
	out := []DiskInfo{}
	for _, p := range parts {
		fs := strings.ToLower(p.Fstype)
		if pseudoFS[fs] && !(fs == "overlay" && p.Mountpoint == "/") {
			continue
		}
		if seen[p.Device] && p.Device != "" {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		u, err := disk.UsageWithContext(ctx, p.Mountpoint)
		if err != nil || u.Total == 0 {
			continue // unreadable or empty: nothing worth showing
		}
		seen[p.Device] = true
		out = append(out, DiskInfo{
			Name:       p.Mountpoint,
			Device:     p.Device,
			FsType:     p.Fstype,
			TotalBytes: clampInt64(u.Total),
			FreeBytes:  clampInt64(u.Free),
		})
	}
	slices.SortFunc(out, func(a, b DiskInfo) int { return cmp.Compare(a.Name, b.Name) })
	return out, nil
}

func clampInt64(v uint64) int64 {
	if v > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(v)
}
