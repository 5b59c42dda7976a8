package diskbench

import "unsafe"

// uintptrOf returns the address of b's first byte (for alignment only).
func uintptrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }
