// Command bookieagent recommends BookKeeper bookie disk settings from
// measurements on the node (recommend), reports disk capacity and time to
// read-only (report), and runs as a DaemonSet serving /metrics, /report,
// /recommendation and /healthz (serve). See docs/bookieagent.md.
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
		fmt.Fprintf(os.Stderr, "bookieagent: %v\n", err)
		if interrupted || errors.Is(err, context.Canceled) {
			os.Exit(130)
		}
		os.Exit(1)
	}
}
