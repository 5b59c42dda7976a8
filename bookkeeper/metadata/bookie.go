package metadata

import (
	"fmt"
	"net"
	"strconv"

	"google.golang.org/protobuf/proto"

	"github.com/tierkeeper/tierkeeper/internal/bkproto"
)

// Endpoint is one endpoint a bookie publishes in its registration.
type Endpoint struct {
	ID         string
	Host       string
	Port       int
	Protocol   string
	Auth       []string
	Extensions []string
}

// Address returns host:port.
func (e Endpoint) Address() string { return net.JoinHostPort(e.Host, strconv.Itoa(e.Port)) }

// BookieServiceInfo is a bookie's registration record
// (BookieServiceInfoFormat, stored under <root>/available).
type BookieServiceInfo struct {
	Endpoints  []Endpoint
	Properties map[string]string
}

// ProtocolBookieRPC is the endpoint protocol of a bookie's client port.
const ProtocolBookieRPC = "bookie-rpc"

// RPCEndpoint returns the bookie-rpc endpoint.
func (b *BookieServiceInfo) RPCEndpoint() (Endpoint, bool) {
	for _, e := range b.Endpoints {
		if e.Protocol == ProtocolBookieRPC {
			return e, true
		}
	}
	return Endpoint{}, false
}

// ParseBookieServiceInfo decodes a BookieServiceInfoFormat protobuf (plain,
// not length-prefixed).
func ParseBookieServiceInfo(data []byte) (*BookieServiceInfo, error) {
	var f bkproto.BookieServiceInfoFormat
	if err := proto.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadBookieInfo, err)
	}
	info := &BookieServiceInfo{Properties: f.GetProperties()}
	for _, e := range f.GetEndpoints() {
		if e.GetPort() < 0 || e.GetPort() > 65535 {
			return nil, fmt.Errorf("%w: endpoint %q port %d", ErrBadBookieInfo, e.GetId(), e.GetPort())
		}
		info.Endpoints = append(info.Endpoints, Endpoint{
			ID: e.GetId(), Host: e.GetHost(), Port: int(e.GetPort()), Protocol: e.GetProtocol(),
			Auth: e.GetAuth(), Extensions: e.GetExtensions(),
		})
	}
	return info, nil
}

// MarshalBookieServiceInfo encodes b as a bookie writes it into its
// registration znode. The reader never writes registrations; tests use it.
func MarshalBookieServiceInfo(b *BookieServiceInfo) ([]byte, error) {
	f := &bkproto.BookieServiceInfoFormat{Properties: b.Properties}
	for _, e := range b.Endpoints {
		f.Endpoints = append(f.Endpoints, &bkproto.BookieServiceInfoFormat_Endpoint{
			Id: proto.String(e.ID), Host: proto.String(e.Host), Port: proto.Int32(int32(e.Port)),
			Protocol: proto.String(e.Protocol), Auth: e.Auth, Extensions: e.Extensions,
		})
	}
	return proto.Marshal(f)
}

// validBookieID reports whether id uses only the characters BookKeeper
// allows in bookie ids ([a-zA-Z0-9:._-]), so it is safe in a znode path.
func validBookieID(id string) bool {
	if id == "" || id == "." || id == ".." {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == ':' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// hostPortOf parses a bookie id as host:port, the legacy id form.
func hostPortOf(id string) (string, bool) {
	host, port, err := net.SplitHostPort(id)
	if err != nil || host == "" {
		return "", false
	}
	p, err := strconv.Atoi(port)
	if err != nil || p <= 0 || p > 65535 {
		return "", false
	}
	return net.JoinHostPort(host, port), true
}
