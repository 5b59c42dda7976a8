package metadata

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// ConnectOptions configures Connect.
type ConnectOptions struct {
	// SessionTimeout is the ZooKeeper session timeout. Default 30 s.
	SessionTimeout time.Duration
	// Logger receives the ZooKeeper client's own messages at debug level.
	// Default: discard.
	Logger *slog.Logger
}

// Connect opens a ZooKeeper session to servers (host:port, comma-separated
// or as a list) and waits until it is established or ctx ends. The caller
// closes the returned connection.
func Connect(ctx context.Context, servers []string, opts ConnectOptions) (*zk.Conn, error) {
	if opts.SessionTimeout <= 0 {
		opts.SessionTimeout = 30 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	var list []string
	for _, s := range servers {
		for _, p := range strings.Split(s, ",") {
			if p = strings.TrimSpace(p); p != "" {
				list = append(list, p)
			}
		}
	}
	if len(list) == 0 {
		return nil, fmt.Errorf("zookeeper: no server address given")
	}
	conn, events, err := zk.Connect(list, opts.SessionTimeout, zk.WithLogger(zkLogger{opts.Logger}), zk.WithLogInfo(false))
	if err != nil {
		return nil, fmt.Errorf("zookeeper %s: %w", strings.Join(list, ","), err)
	}
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return nil, fmt.Errorf("zookeeper %s: connection closed", strings.Join(list, ","))
			}
			if ev.State == zk.StateHasSession {
				return conn, nil
			}
			if ev.State == zk.StateAuthFailed {
				conn.Close()
				return nil, fmt.Errorf("zookeeper %s: authentication failed", strings.Join(list, ","))
			}
		case <-ctx.Done():
			conn.Close()
			return nil, fmt.Errorf("zookeeper %s: no session: %w", strings.Join(list, ","), ctx.Err())
		}
	}
}

type zkLogger struct{ l *slog.Logger }

func (z zkLogger) Printf(format string, args ...any) {
	z.l.Debug("zookeeper client", "msg", fmt.Sprintf(format, args...))
}

// ParseServiceURI splits a ZooKeeper address as operators write it into the
// server list and the ledgers root. Accepted forms:
//
//	host:2181,host2:2181                         (root "")
//	host:2181/ledgers                            (chroot-style suffix)
//	zk+hierarchical://host:2181;host2:2181/ledgers  (BookKeeper metadataServiceUri)
//	metadata-store:zk:host:2181/ledgers          (Pulsar's BookKeeper metadata URI)
//	zk:host:2181/ledgers
//
// root is "" when the address names none.
func ParseServiceURI(s string) (servers []string, root string, err error) {
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(s, "metadata-store:")
	if i := strings.Index(s, "://"); i >= 0 {
		scheme := s[:i]
		if scheme != "zk" && !strings.HasPrefix(scheme, "zk+") {
			return nil, "", fmt.Errorf("unsupported metadata service scheme %q (want zk or zk+<manager>)", scheme)
		}
		s = s[i+3:]
	} else {
		s = strings.TrimPrefix(s, "zk:")
	}
	if i := strings.IndexByte(s, '/'); i >= 0 {
		s, root = s[:i], s[i:]
	}
	for _, p := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ';' }) {
		if p = strings.TrimSpace(p); p != "" {
			servers = append(servers, p)
		}
	}
	if len(servers) == 0 {
		return nil, "", fmt.Errorf("no ZooKeeper server in %q", s)
	}
	return servers, strings.TrimRight(root, "/"), nil
}
