package bookieagent

import "syscall"

// devOf returns st_dev from an os.FileInfo.Sys() value, or 0.
func devOf(sys any) uint64 {
	if st, ok := sys.(*syscall.Stat_t); ok {
		return uint64(st.Dev)
	}
	return 0
}
