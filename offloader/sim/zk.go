package sim

import (
	"fmt"
	"path"
	"sort"
	"strings"
	"time"

	gozk "github.com/go-zookeeper/zk"
)

// znode is one node of the simulated ZooKeeper tree.
type znode struct {
	data    []byte
	version int32
	owner   int64 // ephemeral owner session, 0: persistent
	ctime   time.Time
	mtime   time.Time
	czxid   int64
	mzxid   int64
}

// zkServer is an in-memory ZooKeeper with the semantics the offloader
// relies on: per-node versions, compare-and-set Set and Delete (version -1
// matches any), ephemeral nodes owned by a session and deleted when it
// ends, NoNode / NodeExists / BadVersion / NotEmpty, and atomic multi (all
// ops or none, errors per op as the server reports them). Sequential and
// container nodes, ACLs and watches are not modelled (the offloader uses
// none of them). Callers hold World.mu.
type zkServer struct {
	nodes map[string]*znode
	zxid  int64
	// sessions: id → alive.
	sessions map[int64]bool
	nextSess int64
	// onWrite, when set, is called after every applied change with the
	// session and the paths changed (invariants).
	onWrite func(sess int64, paths []string)
}

func newZKServer() *zkServer {
	return &zkServer{nodes: map[string]*znode{"/": {}}, sessions: map[int64]bool{}, nextSess: 0x1000}
}

func (z *zkServer) newSession() int64 {
	z.nextSess++
	z.sessions[z.nextSess] = true
	return z.nextSess
}

// expire ends session id and deletes its ephemeral nodes.
func (z *zkServer) expire(id int64) []string {
	if !z.sessions[id] {
		return nil
	}
	delete(z.sessions, id)
	var gone []string
	for p, n := range z.nodes {
		if n.owner == id {
			gone = append(gone, p)
		}
	}
	sort.Strings(gone)
	for _, p := range gone {
		delete(z.nodes, p)
	}
	return gone
}

func parentOf(p string) string {
	d := path.Dir(p)
	return d
}

func validPath(p string) error {
	if p == "" || p[0] != '/' || (len(p) > 1 && strings.HasSuffix(p, "/")) || strings.Contains(p, "//") {
		return gozk.ErrInvalidPath
	}
	return nil
}

func (z *zkServer) stat(n *znode, p string) *gozk.Stat {
	return &gozk.Stat{Czxid: n.czxid, Mzxid: n.mzxid, Ctime: n.ctime.UnixMilli(), Mtime: n.mtime.UnixMilli(),
		Version: n.version, EphemeralOwner: n.owner, DataLength: int32(len(n.data)), NumChildren: int32(len(z.children(p)))}
}

func (z *zkServer) children(p string) []string {
	prefix := p + "/"
	if p == "/" {
		prefix = "/"
	}
	var out []string
	for q := range z.nodes {
		if q != "/" && strings.HasPrefix(q, prefix) && !strings.Contains(q[len(prefix):], "/") {
			out = append(out, q[len(prefix):])
		}
	}
	sort.Strings(out)
	return out
}

func (z *zkServer) get(p string) ([]byte, *gozk.Stat, error) {
	if err := validPath(p); err != nil {
		return nil, nil, err
	}
	n, ok := z.nodes[p]
	if !ok {
		return nil, nil, gozk.ErrNoNode
	}
	return append([]byte(nil), n.data...), z.stat(n, p), nil
}

func (z *zkServer) getChildren(p string) ([]string, *gozk.Stat, error) {
	if err := validPath(p); err != nil {
		return nil, nil, err
	}
	n, ok := z.nodes[p]
	if !ok {
		return nil, nil, gozk.ErrNoNode
	}
	return z.children(p), z.stat(n, p), nil
}

// op is one write of a multi (or a single write).
type op struct {
	kind    string // create, set, delete, check
	path    string
	data    []byte
	version int32
	flags   int32
}

func (o op) String() string {
	switch o.kind {
	case "create":
		return fmt.Sprintf("create %s", o.path)
	case "set":
		return fmt.Sprintf("set %s v%d", o.path, o.version)
	case "delete":
		return fmt.Sprintf("delete %s v%d", o.path, o.version)
	}
	return fmt.Sprintf("check %s v%d", o.path, o.version)
}

// overlay is a tentative view of the tree during a multi.
type overlay struct {
	z       *zkServer
	changed map[string]*znode // nil value: deleted
}

func (v *overlay) node(p string) (*znode, bool) {
	if n, ok := v.changed[p]; ok {
		return n, n != nil
	}
	n, ok := v.z.nodes[p]
	return n, ok
}

func (v *overlay) hasChildren(p string) bool {
	prefix := p + "/"
	for q, n := range v.changed {
		if n != nil && strings.HasPrefix(q, prefix) {
			return true
		}
	}
	for q := range v.z.nodes {
		if strings.HasPrefix(q, prefix) {
			if n, ok := v.changed[q]; ok && n == nil {
				continue
			}
			return true
		}
	}
	return false
}

// apply checks and applies o to the overlay.
func (v *overlay) apply(sess int64, o op, now time.Time, zxid int64) (*gozk.Stat, string, error) {
	if err := validPath(o.path); err != nil {
		return nil, "", err
	}
	n, exists := v.node(o.path)
	switch o.kind {
	case "check":
		if !exists {
			return nil, "", gozk.ErrNoNode
		}
		if o.version != -1 && o.version != n.version {
			return nil, "", gozk.ErrBadVersion
		}
		return nil, "", nil
	case "create":
		if o.flags&(gozk.FlagSequence) != 0 {
			return nil, "", gozk.ErrAPIError // not modelled
		}
		if exists {
			return nil, "", gozk.ErrNodeExists
		}
		par, ok := v.node(parentOf(o.path))
		if !ok {
			return nil, "", gozk.ErrNoNode
		}
		if par.owner != 0 {
			return nil, "", gozk.ErrNoChildrenForEphemerals
		}
		nn := &znode{data: append([]byte(nil), o.data...), ctime: now, mtime: now, czxid: zxid, mzxid: zxid}
		if o.flags&gozk.FlagEphemeral != 0 {
			nn.owner = sess
		}
		v.changed[o.path] = nn
		return nil, o.path, nil
	case "set":
		if !exists {
			return nil, "", gozk.ErrNoNode
		}
		if o.version != -1 && o.version != n.version {
			return nil, "", gozk.ErrBadVersion
		}
		nn := *n
		nn.data, nn.version, nn.mtime, nn.mzxid = append([]byte(nil), o.data...), n.version+1, now, zxid
		v.changed[o.path] = &nn
		return v.z.stat(&nn, o.path), "", nil
	case "delete":
		if !exists {
			return nil, "", gozk.ErrNoNode
		}
		if o.version != -1 && o.version != n.version {
			return nil, "", gozk.ErrBadVersion
		}
		if v.hasChildren(o.path) {
			return nil, "", gozk.ErrNotEmpty
		}
		v.changed[o.path] = nil
		return nil, "", nil
	}
	return nil, "", gozk.ErrAPIError
}

// multi applies ops atomically for session sess: every op is checked in
// order against the state the earlier ops leave; on the first failure
// nothing is applied, the ops before it report no error, the failing one
// its error and the later ones a runtime inconsistency, as ZooKeeper's
// multi does (go-zookeeper returns the first error as Multi's error).
func (z *zkServer) multi(sess int64, now time.Time, ops []op) ([]gozk.MultiResponse, error) {
	v := &overlay{z: z, changed: map[string]*znode{}}
	res := make([]gozk.MultiResponse, len(ops))
	zxid := z.zxid + 1
	for i, o := range ops {
		st, s, err := v.apply(sess, o, now, zxid)
		if err != nil {
			for j := range res {
				switch {
				case j < i:
					res[j] = gozk.MultiResponse{}
				case j == i:
					res[j] = gozk.MultiResponse{Error: err}
				default:
					res[j] = gozk.MultiResponse{Error: errRuntimeInconsistency}
				}
			}
			return res, err
		}
		res[i] = gozk.MultiResponse{Stat: st, String: s}
	}
	z.zxid = zxid
	var paths []string
	for p, n := range v.changed {
		paths = append(paths, p)
		if n == nil {
			delete(z.nodes, p)
		} else {
			z.nodes[p] = n
		}
	}
	sort.Strings(paths)
	if z.onWrite != nil && len(paths) > 0 {
		z.onWrite(sess, paths)
	}
	return res, nil
}

// errRuntimeInconsistency is what go-zookeeper reports for the ops after
// the failing one of a multi (ZooKeeper's RUNTIMEINCONSISTENCY, code -2,
// which it maps to no named error).
var errRuntimeInconsistency = fmt.Errorf("unknown error: %v", int32(-2))

// mkdirs creates p and its parents (persistent), for setup.
func (z *zkServer) mkdirs(p string, data []byte, now time.Time) {
	parts := strings.Split(strings.Trim(p, "/"), "/")
	for i := range parts {
		q := "/" + strings.Join(parts[:i+1], "/")
		if _, ok := z.nodes[q]; !ok {
			z.zxid++
			z.nodes[q] = &znode{ctime: now, mtime: now, czxid: z.zxid, mzxid: z.zxid}
		}
	}
	n := z.nodes[p]
	n.data = append([]byte(nil), data...)
}
