package hostfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// unlimited: cgroup v1 reports "no limit" as a huge page-rounded number
// (9223372036854771712); anything from 2^62 on is treated as none.
const unlimited = int64(1) << 62

// MemoryLimit returns the memory limit of this process's cgroup and where
// it was read: cgroup v2's memory.max, else cgroup v1's
// memory.limit_in_bytes, found through <procfs>/self/cgroup below
// <sysfs>/fs/cgroup. The effective limit is the lowest along the path to
// the root (a parent's limit applies to its children). ok is false when no
// limit is set ("max", v1's huge value) or the process is in no memory
// cgroup; files the kernel does not have are not errors.
func (h FS) MemoryLimit() (limit int64, source string, ok bool, err error) {
	cgs, err := h.selfCgroups()
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return 0, "", false, nil
		}
		return 0, "", false, err
	}
	// cgroup v2 (the unified hierarchy, id 0), then v1's memory controller.
	for _, v := range []struct {
		match func(cgroup) bool
		dir   string
		file  string
		name  string
	}{
		{func(c cgroup) bool { return c.id == 0 }, "", "memory.max", "cgroup v2 memory.max"},
		{func(c cgroup) bool { return slices.Contains(c.controllers, "memory") }, "memory", "memory.limit_in_bytes", "cgroup v1 memory.limit_in_bytes"},
	} {
		i := slices.IndexFunc(cgs, v.match)
		if i < 0 {
			continue
		}
		l, where, found, err := h.lowestLimit(v.dir, cgs[i].path, v.file)
		if err != nil {
			return 0, "", false, err
		}
		if found {
			if l <= 0 || l >= unlimited {
				return 0, v.name + " " + where + ": no limit", false, nil
			}
			return l, v.name + " " + where, true, nil
		}
	}
	return 0, "", false, nil
}

// cgroup is one line of /proc/self/cgroup: hierarchy-ID:controllers:path.
type cgroup struct {
	id          int
	controllers []string
	path        string
}

// selfCgroups reads <procfs>/self/cgroup (procfs.Proc.Cgroups needs a
// /proc/self symlink, which a fixture tree does not have).
func (h FS) selfCgroups() ([]cgroup, error) {
	f := filepath.Join(h.procRoot(), "self", "cgroup")
	b, err := os.ReadFile(f)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", f, err)
	}
	var out []cgroup
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if line == "" {
			continue
		}
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			return nil, fmt.Errorf("%s: %w: %q", f, ErrBadProcFile, line)
		}
		id, err := strconv.Atoi(parts[0])
		if err != nil {
			return nil, fmt.Errorf("%s: %w: %q", f, ErrBadProcFile, line)
		}
		var ctl []string
		if parts[1] != "" {
			ctl = strings.Split(parts[1], ",")
		}
		out = append(out, cgroup{id: id, controllers: ctl, path: parts[2]})
	}
	return out, nil
}

// lowestLimit reads file in the cgroup at p and every ancestor under
// <sysfs>/fs/cgroup/<dir> and returns the lowest limit and where it was;
// found is false when no level has the file. A container's own cgroup
// namespace shows p as "/" while the mount holds it at the root, so the
// root is always read.
func (h FS) lowestLimit(dir, p, file string) (int64, string, bool, error) {
	root := h.sys("fs", "cgroup", dir)
	best, where, found := unlimited, "", false
	for q := path.Clean("/" + p); ; q = path.Dir(q) {
		f := filepath.Join(root, filepath.FromSlash(q), file)
		b, err := os.ReadFile(f)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return 0, "", false, fmt.Errorf("read %s: %w", f, err)
		default:
			s := strings.TrimSpace(string(b))
			v := unlimited
			if s != "max" {
				if v, err = strconv.ParseInt(s, 10, 64); err != nil || v < 0 {
					return 0, "", false, fmt.Errorf("%s: %w: %q", f, ErrBadProcFile, s)
				}
			}
			if !found || v < best {
				best, where = v, f
			}
			found = true
		}
		if q == "/" {
			break
		}
	}
	return best, where, found, nil
}
