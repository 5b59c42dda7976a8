// Command bookieagent recommends BookKeeper bookie disk settings from
// measurements on the node (recommend), reports disk capacity and time to
// read-only (report), and runs as a DaemonSet serving /metrics, /report,
// /recommendation and /healthz (serve). See docs/bookieagent.md.
package main

import "github.com/tierkeeper/tierkeeper/internal/cli"

func main() { cli.Main(newRootCmd()) }
