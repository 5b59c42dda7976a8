package testenv

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// CA is a test certificate authority (ECDSA P-256, valid one day) whose
// certificates the TLS options of StartZooKeeperWith and StartBookies and
// the clients under test use. Files are PEM: the CA certificate, and per
// issued certificate its chain and its PKCS#8 key, as ZooKeeper's and
// BookKeeper's PEM key stores read them.
type CA struct {
	// CertFile is the CA certificate (a trust store).
	CertFile string
	dir      string
	cert     *x509.Certificate
	key      *ecdsa.PrivateKey
	n        int64
}

// Cert is a certificate the CA issued.
type Cert struct {
	CertFile string // the certificate
	KeyFile  string // its PKCS#8 private key
	// KeyStoreFile holds the key and the certificate in one PEM file
	// (ZooKeeper's ssl.keyStore.type=PEM).
	KeyStoreFile string
}

// NewCA creates a CA named name in a temporary directory of t.
func NewCA(t testing.TB, name string) *CA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	ca := &CA{dir: t.TempDir(), cert: cert, key: key, n: 1}
	ca.CertFile = filepath.Join(ca.dir, "ca.pem")
	writePEM(t, ca.CertFile, "CERTIFICATE", der)
	return ca
}

// Issue returns a certificate for name, usable by servers and clients,
// valid for the DNS names and IP addresses in sans.
func (ca *CA) Issue(t testing.TB, name string, sans ...string) Cert {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ca.n++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(ca.n), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	for _, s := range sans {
		if ip := net.ParseIP(s); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, s)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	c := Cert{CertFile: filepath.Join(ca.dir, name+".crt"), KeyFile: filepath.Join(ca.dir, name+".key"),
		KeyStoreFile: filepath.Join(ca.dir, name+".keystore.pem")}
	writePEM(t, c.CertFile, "CERTIFICATE", der)
	writePEM(t, c.KeyFile, "PRIVATE KEY", kder)
	ks := append(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	if err := os.WriteFile(c.KeyStoreFile, ks, 0o600); err != nil {
		t.Fatal(err)
	}
	return c
}

func writePEM(t testing.TB, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// BookieTLS returns the bookie configuration lines (BookieOptions.Extra)
// that turn TLS on with PEM files: the bookie serves cert, trusts clients
// signed by ca and, with clientAuth, requires a client certificate
// (tlsClientAuthentication). Plain connections are still served.
func BookieTLS(ca *CA, cert Cert, clientAuth bool) []string {
	return []string{
		"tlsProviderFactoryClass=org.apache.bookkeeper.tls.TLSContextFactory",
		"tlsProvider=JDK",
		"tlsKeyStoreType=PEM",
		"tlsKeyStore=" + cert.KeyFile,
		"tlsCertificatePath=" + cert.CertFile,
		"tlsTrustStoreType=PEM",
		"tlsTrustStore=" + ca.CertFile,
		fmt.Sprintf("tlsClientAuthentication=%t", clientAuth),
	}
}
