// Command offloader copies closed BookKeeper ledgers of Pulsar topics to
// object storage in Pulsar's tiered-storage format and inspects what it
// works on. This file holds the root command; each subcommand lives in its
// own file (ledger*.go: BookKeeper ledgers; topics*.go: managed ledgers) and
// registers itself with addCommand from an init function.
//
// Results go to stdout (text, or JSON with --output json); progress and
// logs go to stderr.
package main

import (
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"
	// Root certificates for S3, COS and the broker admin API over HTTPS
	// where the system has none (the scratch image): Go uses them only
	// when no system roots are found, so SSL_CERT_FILE/SSL_CERT_DIR and
	// the host's bundle take precedence.
	_ "golang.org/x/crypto/x509roots/fallback"

	"github.com/tierkeeper/tierkeeper/internal/cli"
	"github.com/tierkeeper/tierkeeper/internal/connflags"
)

// globalOptions are the flags every subcommand shares.
type globalOptions struct {
	// ZKServer is --zk (host:port[,host:port...], optionally with a /root
	// suffix, or a metadata service URI: zk+hierarchical://...,
	// metadata-store:zk:...), its timeouts and the secured-ZooKeeper flags.
	connflags.ZKServer
	// Output is "text" or "json".
	Output string
	// LogLevel is debug, info, warn or error (logs go to stderr).
	LogLevel string
}

func (g *globalOptions) addFlags(cmd *cobra.Command) {
	f := cmd.PersistentFlags()
	g.ZKServer.AddFlags(f, "127.0.0.1:2181", "ZooKeeper `address` (host:port[,host:port][/root]) or metadata service URI")
	f.StringVarP(&g.Output, "output", "o", "text", "output format: text or json")
	f.StringVar(&g.LogLevel, "log-level", "warn", "log level for stderr: debug, info, warn, error")
}

func (g *globalOptions) validate() error {
	if err := g.ZKServer.Validate(); err != nil {
		return err
	}
	switch g.Output {
	case "text", "json":
	default:
		return fmt.Errorf("--output %q: want text or json", g.Output)
	}
	_, err := cli.ParseLogLevel("--log-level", g.LogLevel)
	return err
}

// json reports whether results are printed as JSON.
func (g *globalOptions) json() bool { return g.Output == "json" }

// logger returns a logger writing text records to w (stderr).
func (g *globalOptions) logger(w io.Writer) *slog.Logger {
	l, _ := cli.ParseLogLevel("--log-level", g.LogLevel)
	return cli.Logger(w, l)
}

// subcommands are added to the root by addCommand from init functions in
// the subcommand files.
var subcommands []func(g *globalOptions) *cobra.Command

// addCommand registers a subcommand constructor (call it from init).
func addCommand(f func(g *globalOptions) *cobra.Command) { subcommands = append(subcommands, f) }

func newRootCmd() *cobra.Command {
	g := &globalOptions{}
	root := &cobra.Command{
		Use:   "offloader",
		Short: "Offload closed BookKeeper ledgers of Pulsar topics to object storage",
		Long: strings.TrimSpace(`
offloader copies closed BookKeeper ledgers of Pulsar topics to object storage
in the format Pulsar's tiered-storage reader understands, and inspects the
ledgers and managed ledgers it works on. It reads ledgers straight from the
bookies and never fences them, so it is safe next to live brokers.

A secured ZooKeeper: --zk names the secureClientPort with --zk-tls-ca (and
--zk-tls-cert/--zk-tls-key when it requires client certificates);
--zk-digest-file names a file holding user:password (never printed). Commands
that read bookies take --bk-tls-ca/--bk-tls-cert/--bk-tls-key for bookies with
TLS.

Results go to stdout (--output json for machines); progress and logs go to
stderr.`),
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(*cobra.Command, []string) error {
			return g.validate()
		},
	}
	g.addFlags(root)
	for _, f := range subcommands {
		root.AddCommand(f(g))
	}
	return root
}

func main() { cli.Main(newRootCmd()) }
