package egress

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"
)

// CALifetime is how long a CA made by NewCA is valid. A sandbox that lives
// longer gets its vault's interception refused once the CA expires.
const CALifetime = 7 * 24 * time.Hour

// maxLeafCache bounds the leaf certificates a CA keeps; a full cache is
// emptied.
const maxLeafCache = 1024

// maxCAPEMBytes bounds a CA certificate or key file.
const maxCAPEMBytes = 64 << 10

// CA is a sandbox's own certificate authority: the proxy presents leaves
// it issues on the connections it intercepts for the vault, and the
// sandbox trusts its certificate (CertPEM), never its key (KeyPEM, for the
// proxy only).
type CA struct {
	cert    *x509.Certificate
	certDER []byte
	key     *ecdsa.PrivateKey
	// leafKey is shared by every leaf: one key per CA, made once.
	leafKey *ecdsa.PrivateKey

	mu     sync.Mutex
	leaves map[string]*tls.Certificate
}

// NewCA makes a CA named commonName: an ECDSA P-256 key and a certificate
// valid for CALifetime.
//
// When hosts are given, the certificate carries critical name constraints
// (RFC 5280 4.2.1.10) that limit it to them: a DNS rule permits that name
// and the names below it ("*.example.com" permits what is below
// example.com), an IP rule that one address, and every other IP address is
// excluded. A client that enforces constraints (Go, OpenSSL 1.1+, NSS)
// then refuses any leaf for another name even if the key leaks; Leaf
// refuses such names too.
func NewCA(commonName string, hosts ...Rule) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := randSerial()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName, Organization: []string{"podbot sandbox"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(CALifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	if len(hosts) > 0 {
		tmpl.PermittedDNSDomainsCritical = true
		for _, h := range hosts {
			if a, err := netip.ParseAddr(h.Host); err == nil {
				bits := a.BitLen()
				tmpl.PermittedIPRanges = append(tmpl.PermittedIPRanges, &net.IPNet{IP: a.AsSlice(), Mask: net.CIDRMask(bits, bits)})
				continue
			}
			tmpl.PermittedDNSDomains = append(tmpl.PermittedDNSDomains, strings.TrimPrefix(h.Host, "*."))
		}
		if len(tmpl.PermittedIPRanges) == 0 {
			tmpl.ExcludedIPRanges = []*net.IPNet{
				{IP: net.IPv4zero.To4(), Mask: net.CIDRMask(0, 32)},
				{IP: net.IPv6zero, Mask: net.CIDRMask(0, 128)},
			}
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("make sandbox CA: %w", err)
	}
	return newCA(der, key)
}

func newCA(der []byte, key *ecdsa.PrivateKey) (*CA, error) {
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	return &CA{cert: cert, certDER: der, key: key, leafKey: leafKey, leaves: map[string]*tls.Certificate{}}, nil
}

func randSerial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
}

// ErrBadCA classes a CA certificate or key that ParseCA refuses.
var ErrBadCA = errors.New("bad sandbox CA")

// ParseCA reads a CA from the PEM that CertPEM and KeyPEM wrote. It
// refuses input over 64 KiB, a certificate that is not a CA, a key that
// is not ECDSA or does not match, and an expired certificate.
func ParseCA(certPEM, keyPEM []byte) (*CA, error) {
	bad := func(msg string) error { return fmt.Errorf("%w: %s", ErrBadCA, msg) }
	if len(certPEM) > maxCAPEMBytes || len(keyPEM) > maxCAPEMBytes {
		return nil, bad("PEM larger than 64 KiB")
	}
	cb, _ := pem.Decode(certPEM)
	if cb == nil || cb.Type != "CERTIFICATE" {
		return nil, bad("no CERTIFICATE block")
	}
	kb, _ := pem.Decode(keyPEM)
	if kb == nil || kb.Type != "EC PRIVATE KEY" {
		return nil, bad("no EC PRIVATE KEY block")
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		return nil, bad("the key does not parse")
	}
	ca, err := newCA(cb.Bytes, key)
	if err != nil {
		return nil, bad("the certificate does not parse")
	}
	if !ca.cert.IsCA || !ca.cert.BasicConstraintsValid {
		return nil, bad("the certificate is not a CA")
	}
	if pub, ok := ca.cert.PublicKey.(*ecdsa.PublicKey); !ok || !pub.Equal(&key.PublicKey) {
		return nil, bad("the key does not match the certificate")
	}
	if time.Now().After(ca.cert.NotAfter) {
		return nil, bad("the certificate has expired")
	}
	return ca, nil
}

// Certificate returns the CA's certificate.
func (c *CA) Certificate() *x509.Certificate { return c.cert }

// CertPEM returns the CA certificate in PEM: what the sandbox trusts.
func (c *CA) CertPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.certDER})
}

// KeyPEM returns the CA's private key in PEM. It is for the proxy alone:
// write it with mode 0600 where only the proxy reads it, never into the
// sandbox.
func (c *CA) KeyPEM() ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(c.key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

// Leaf returns a certificate for host (a normalised name or IP address),
// signed by the CA and valid until the CA expires, issued once and then
// cached. A host outside the CA's name constraints is refused.
func (c *CA) Leaf(host string) (*tls.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if l, ok := c.leaves[host]; ok && time.Now().Before(l.Leaf.NotAfter) {
		return l, nil
	}
	if !c.permits(host) {
		return nil, fmt.Errorf("the sandbox CA may not issue for %s", host)
	}
	serial, err := randSerial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: host},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     c.cert.NotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if a, err := netip.ParseAddr(host); err == nil {
		tmpl.IPAddresses = []net.IP{a.AsSlice()}
	} else {
		tmpl.DNSNames = []string{host}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, &c.leafKey.PublicKey, c.key)
	if err != nil {
		return nil, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	if len(c.leaves) >= maxLeafCache {
		clear(c.leaves)
	}
	l := &tls.Certificate{Certificate: [][]byte{der, c.certDER}, PrivateKey: c.leafKey, Leaf: leaf}
	c.leaves[host] = l
	return l, nil
}

// permits reports whether the CA's name constraints allow host.
func (c *CA) permits(host string) bool {
	if a, err := netip.ParseAddr(host); err == nil {
		for _, r := range c.cert.ExcludedIPRanges {
			if r.Contains(a.AsSlice()) {
				return false
			}
		}
		if len(c.cert.PermittedIPRanges) == 0 {
			return true
		}
		for _, r := range c.cert.PermittedIPRanges {
			if r.Contains(a.AsSlice()) {
				return true
			}
		}
		return false
	}
	if len(c.cert.PermittedDNSDomains) == 0 {
		return true
	}
	for _, d := range c.cert.PermittedDNSDomains {
		if host == d || strings.HasSuffix(host, "."+d) {
			return true
		}
	}
	return false
}
