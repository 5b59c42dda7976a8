package zk

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// ErrBadAddress is returned (wrapped, with details) by ParseServiceURI.
var ErrBadAddress = errors.New("bad ZooKeeper address")

// ParseServiceURI splits a ZooKeeper address as operators write it into
// the server list and the path after it (BookKeeper's ledgers root, or a
// chroot). Accepted forms:
//
//	host:2181,host2:2181                            (path "")
//	host:2181/ledgers                               (chroot-style suffix)
//	zk+hierarchical://host:2181;host2:2181/ledgers  (BookKeeper metadataServiceUri)
//	metadata-store:zk:host:2181/ledgers             (Pulsar's metadata-store URL)
//	zk:host:2181/ledgers, zk://host:2181/ledgers
//
// A server without a port means ZooKeeper's 2181 (go-zookeeper adds it);
// IPv6 literals are written [::1]:2181. path is "" or an absolute znode
// path without a trailing slash. Errors wrap ErrBadAddress.
func ParseServiceURI(s string) (servers []string, path string, err error) {
	in := s
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(s, "metadata-store:")
	if i := strings.Index(s, "://"); i >= 0 {
		scheme := s[:i]
		if scheme != "zk" && !strings.HasPrefix(scheme, "zk+") {
			return nil, "", fmt.Errorf("%w %q: unsupported metadata service scheme %q (want zk or zk+<manager>)", ErrBadAddress, in, scheme)
		}
		s = s[i+3:]
	} else {
		s = strings.TrimPrefix(s, "zk:")
	}
	if i := strings.IndexByte(s, '/'); i >= 0 {
		s, path = s[:i], strings.TrimRight(s[i:], "/")
	}
	if i := strings.IndexFunc(path, func(r rune) bool { return r <= ' ' || r >= 0x7f && r <= 0x9f }); i >= 0 {
		return nil, "", fmt.Errorf("%w %q: path %q has a space or control character", ErrBadAddress, in, path)
	}
	for _, seg := range strings.Split(strings.TrimPrefix(path, "/"), "/") {
		if path != "" && (seg == "" || seg == "." || seg == "..") {
			return nil, "", fmt.Errorf("%w %q: path %q has an empty, . or .. element", ErrBadAddress, in, path)
		}
	}
	for _, p := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ';' }) {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if err := checkServer(p); err != nil {
			return nil, "", fmt.Errorf("%w %q: server %q: %v", ErrBadAddress, in, p, err)
		}
		servers = append(servers, p)
	}
	if len(servers) == 0 {
		return nil, "", fmt.Errorf("%w %q: no server", ErrBadAddress, in)
	}
	return servers, path, nil
}

// checkServer accepts host, host:port and [ipv6]:port.
func checkServer(p string) error {
	host, port := p, ""
	if strings.HasPrefix(p, "[") || strings.Count(p, ":") == 1 {
		h, pt, err := net.SplitHostPort(p)
		if err != nil {
			return errors.New("want host:port")
		}
		if pt == "" {
			return errors.New("empty port")
		}
		host, port = h, pt
	} else if strings.Contains(p, ":") {
		return errors.New("an IPv6 address needs brackets: [addr]:port")
	}
	if host == "" {
		return errors.New("empty host")
	}
	for _, r := range host {
		if r <= ' ' || r == 0x7f || strings.ContainsRune("/@?#[]\"'\\", r) {
			return fmt.Errorf("invalid character %q in host", r)
		}
	}
	if strings.Trim(host, "0123456789") == "" {
		return errors.New("host is a number: write host:port")
	}
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 || port[0] == '+' {
			return fmt.Errorf("port %q is not a number in 1..65535", port)
		}
	}
	return nil
}
