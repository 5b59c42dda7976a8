// Package zk is tierkeeper's one way to talk to ZooKeeper, on top of
// github.com/go-zookeeper/zk:
//
//   - Connect opens a session and waits for it, bounded by
//     Options.ConnectTimeout; on timeout the error names the servers, the
//     timeout and the last connection failure, so a wrong --zk fails fast
//     and clearly instead of hanging.
//   - Session tracks the session it established. It is lost when the
//     server expires it, when the client stays disconnected for longer
//     than the session timeout (the server has expired it by then, or is
//     about to), or on Close; Lost and Err tell, and a lost Session closes
//     its client so it never silently continues on a new session (whose
//     ephemeral nodes, watches and leases are not the old ones). Build
//     ephemeral nodes and lock recipes (zk.NewLock(s.Conn, ...)) on it and
//     stop work when Lost fires.
//   - OnWatchEvent subscribes one function to every watch event of the
//     session (and EventNotWatching when it is lost), so a caller watching
//     many znodes drops the per-watch channels instead of parking a
//     goroutine on each.
//   - Do (and Get, Children, Set, Delete) run one blocking go-zookeeper
//     request and return as soon as ctx ends; go-zookeeper has no
//     per-request context.
//   - Fence is one generation of a lease as the version checks that prove
//     it is held; WithFence carries it in a context, and SetFenced,
//     DeleteFenced and Fence.Check send the checks and the write as one
//     multi, so a writer whose lease is gone (or taken since, even by its
//     own new session) cannot write at all (ErrFenced). Stores that honour
//     fences can require one (ErrUnfenced for a write without).
//   - Unavailable classifies errors after which no further request of an
//     operation can succeed soon (no server reachable, session expired,
//     client closed): operations of many requests stop at the first one
//     instead of failing request by request, each after go-zookeeper's
//     1 s reconnect pause.
//   - ParseServiceURI reads the ZooKeeper addresses operators write
//     (host:port lists, chroot suffixes, BookKeeper's metadataServiceUri,
//     Pulsar's metadata-store:zk: URLs), for Pulsar's and BookKeeper's
//     metadata alike.
//
// go-zookeeper's own log lines go to the Options.Logger at debug level.
package zk
