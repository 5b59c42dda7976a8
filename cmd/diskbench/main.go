// Command diskbench measures a disk the way a BookKeeper bookie uses it:
// journal appends with fdatasync, entry-log buffered writes, and O_DIRECT
// random reads. See docs/diskbench.md.
package main

import "github.com/tierkeeper/tierkeeper/internal/cli"

func main() { cli.Main(newRootCmd()) }
