// Command diskbench measures a disk the way a BookKeeper bookie uses it:
// journal appends with fdatasync, entry-log buffered writes, and O_DIRECT
// random reads. See docs/diskbench.md.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newRootCmd().ExecuteContext(ctx)
	interrupted := ctx.Err() != nil
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "diskbench: %v\n", err)
		if interrupted || errors.Is(err, context.Canceled) {
			os.Exit(130)
		}
		os.Exit(1)
	}
}
