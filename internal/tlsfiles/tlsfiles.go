// Package tlsfiles is tierkeeper's one way to build a TLS client
// configuration from PEM files (a CA bundle, a client certificate and its
// key), as Pulsar and BookKeeper name them, and to say in words what a
// failed handshake means (untrusted certificate, hostname mismatch,
// certificate refused by the server).
package tlsfiles

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
)

// ErrConfig is wrapped by Config's errors: a file that cannot be read or
// holds no usable PEM.
var ErrConfig = errors.New("tls config")

// Files are the PEM files of a TLS client.
type Files struct {
	// CAFile is a PEM bundle of the CAs that sign the servers'
	// certificates. Empty: the system roots.
	CAFile string
	// CertFile and KeyFile are the client certificate (chain) and its
	// private key (PKCS#1, PKCS#8 or EC), for servers that require client
	// certificates. Both or neither.
	CertFile, KeyFile string
	// SkipHostnameVerification accepts any certificate the CAs signed,
	// whatever names it holds (BookKeeper's client default; ZooKeeper's
	// zookeeper.ssl.hostnameVerification=false). The chain is still
	// verified.
	SkipHostnameVerification bool
}

// Config loads the files into a client configuration (TLS 1.2 or later).
// Errors name the file and wrap ErrConfig.
func (f Files) Config() (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if f.CAFile != "" {
		pem, err := os.ReadFile(f.CAFile)
		if err != nil {
			return nil, fmt.Errorf("%w: CA file: %w", ErrConfig, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%w: CA file %s holds no PEM certificate", ErrConfig, f.CAFile)
		}
		tc.RootCAs = pool
	}
	if (f.CertFile == "") != (f.KeyFile == "") {
		return nil, fmt.Errorf("%w: a client certificate needs both its certificate and its key file", ErrConfig)
	}
	if f.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(f.CertFile, f.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("%w: client certificate %s / key %s: %w", ErrConfig, f.CertFile, f.KeyFile, err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	if f.SkipHostnameVerification {
		roots := tc.RootCAs
		tc.InsecureSkipVerify = true // replaced by the chain check below
		tc.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("tls: server sent no certificate")
			}
			inter := x509.NewCertPool()
			for _, c := range cs.PeerCertificates[1:] {
				inter.AddCert(c)
			}
			_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter})
			if err != nil {
				return &tls.CertificateVerificationError{UnverifiedCertificates: cs.PeerCertificates, Err: err}
			}
			return nil
		}
	}
	return tc, nil
}

// ForAddr returns cfg for a connection to addr (host:port): its ServerName
// is the host unless cfg sets one, so that the certificate is checked
// against the name dialed.
func ForAddr(cfg *tls.Config, addr string) *tls.Config {
	c := cfg.Clone()
	if c.ServerName == "" {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			host = addr
		}
		c.ServerName = host
	}
	return c
}

// Permanent reports whether err is a handshake failure that retrying
// cannot fix: the server's certificate is not trusted or not for this
// name, or the server refused the handshake (a TLS alert: e.g. it wants a
// client certificate, or does not trust ours).
func Permanent(err error) bool {
	var cv *tls.CertificateVerificationError
	var ua x509.UnknownAuthorityError
	var he x509.HostnameError
	var ci x509.CertificateInvalidError
	var alert tls.AlertError
	return errors.As(err, &cv) || errors.As(err, &ua) || errors.As(err, &he) || errors.As(err, &ci) ||
		errors.As(err, &alert) || strings.Contains(err.Error(), "remote error: tls:")
}

// Explain says in words what a handshake error of a client using cfg
// means: which check failed and what to look at. It returns "" for errors
// that are not about TLS. A server that requires a client certificate
// answers an empty one with "certificate required" or, as some TLS stacks
// do, "bad certificate": cfg tells which of the two the client sent.
func Explain(err error, cfg *tls.Config) string {
	var ua x509.UnknownAuthorityError
	var he x509.HostnameError
	var ci x509.CertificateInvalidError
	msg := err.Error()
	noCert := cfg != nil && len(cfg.Certificates) == 0 && cfg.GetClientCertificate == nil
	switch {
	case errors.As(err, &he):
		return "the server's certificate is not for the name dialed (hostname verification): use a name the certificate holds, or turn hostname verification off"
	case errors.As(err, &ua):
		return "the server's certificate is not signed by a trusted CA: check the CA file"
	case errors.As(err, &ci):
		return "the server's certificate is invalid (expired, not yet valid, or not for server use)"
	case strings.Contains(msg, "certificate required"),
		noCert && (strings.Contains(msg, "remote error: tls: bad certificate") || strings.Contains(msg, "remote error: tls: certificate unknown")):
		return "the server requires a client certificate and none was sent: set the client certificate and key"
	case strings.Contains(msg, "remote error: tls: bad certificate"), strings.Contains(msg, "remote error: tls: unknown certificate authority"),
		strings.Contains(msg, "remote error: tls: certificate unknown"):
		return "the server refused the client certificate (not signed by a CA it trusts?)"
	case strings.Contains(msg, "remote error: tls:"):
		return "the server refused the TLS handshake"
	case strings.Contains(msg, "first record does not look like a TLS handshake"):
		return "the server does not speak TLS on this port (a plain port?)"
	}
	return ""
}
