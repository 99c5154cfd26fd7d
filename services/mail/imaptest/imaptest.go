// Package imaptest runs a real IMAP server (go-imap v2's own server over
// its in-memory backend) on 127.0.0.1 for tests of the mailbox sync.
//
// It is test support, never imported by the mail service's own code. It
// sits outside internal/ so that the end-to-end fault tests (deploy/e2e)
// can serve a mailbox to the real mail process, as the *apitest packages
// of pkg/contract serve fakes of the other contexts.
package imaptest

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapserver"
	"github.com/emersion/go-imap/v2/imapserver/imapmemserver"
)

// Server is one IMAP server with one user.
type Server struct {
	Username, Password string
	Host               string
	Port               int
	// RootCAs trusts the certificate of a server from StartTLS; nil for a
	// plain server.
	RootCAs *x509.CertPool

	mu   sync.Mutex
	tls  *tls.Config
	user *imapmemserver.User
	mem  *imapmemserver.Server
	srv  *imapserver.Server
	ln   net.Listener
}

type quiet struct{}

func (quiet) Printf(string, ...any) {}

// Start serves a fresh server with user/password and an empty INBOX on a
// free port of 127.0.0.1; it stops when the test ends.
func Start(t testing.TB, username, password string) *Server {
	t.Helper()
	return start(t, username, password, nil, nil)
}

// StartTLS is Start with implicit TLS, as on port 993: the server says
// nothing until the client's TLS handshake. Its certificate, for 127.0.0.1,
// is trusted by s.RootCAs.
func StartTLS(t testing.TB, username, password string) *Server {
	t.Helper()
	cert, roots, err := selfSigned()
	if err != nil {
		t.Fatal(err)
	}
	return start(t, username, password, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, roots)
}

func start(t testing.TB, username, password string, tlsConfig *tls.Config, roots *x509.CertPool) *Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Username: username, Password: password, Host: "127.0.0.1", Port: ln.Addr().(*net.TCPAddr).Port,
		RootCAs: roots, tls: tlsConfig}
	s.mem = imapmemserver.New()
	s.user = imapmemserver.NewUser(username, password)
	if err := s.user.Create("INBOX", nil); err != nil {
		t.Fatal(err)
	}
	s.mem.AddUser(s.user)
	s.serve(ln)
	t.Cleanup(s.Stop)
	return s
}

func (s *Server) serve(ln net.Listener) {
	s.srv = imapserver.New(&imapserver.Options{
		NewSession: func(*imapserver.Conn) (imapserver.Session, *imapserver.GreetingData, error) {
			return s.mem.NewSession(), nil, nil
		},
		Caps:         imap.CapSet{imap.CapIMAP4rev1: {}, imap.CapIMAP4rev2: {}},
		InsecureAuth: true,
		Logger:       quiet{},
	})
	if s.tls != nil {
		ln = tls.NewListener(ln, s.tls)
	}
	s.ln = ln
	go func() { _ = s.srv.Serve(ln) }()
}

// Stop closes the listener and every connection; the port is free again.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		_ = s.srv.Close()
		s.srv = nil
	}
}

// Restart serves again on the same port after Stop, with the same
// mailboxes: the server "is back".
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var ln net.Listener
	var err error
	// The port was just released; another process taking it in between
	// is possible but rare, so try briefly before giving up.
	for range 50 {
		ln, err = net.Listen("tcp", net.JoinHostPort(s.Host, strconv.Itoa(s.Port)))
		if err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("imaptest: listen again on %d: %v", s.Port, err)
	}
	s.serve(ln)
}

// Append adds a raw message to the folder and returns its UID.
func (s *Server) Append(t testing.TB, folder string, raw []byte) imap.UID {
	t.Helper()
	data, err := s.user.Append(folder, bytes.NewReader(raw), &imap.AppendOptions{Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	return data.UID
}

// CreateFolder adds a folder.
func (s *Server) CreateFolder(t testing.TB, name string) {
	t.Helper()
	if err := s.user.Create(name, nil); err != nil {
		t.Fatal(err)
	}
}

// Recreate deletes and re-creates the folder, empty: the server gives it
// a new UIDVALIDITY, as a real server does after a rebuild.
func (s *Server) Recreate(t testing.TB, folder string) {
	t.Helper()
	if err := s.user.Delete(folder); err != nil && !errors.Is(err, net.ErrClosed) {
		t.Fatal(err)
	}
	if err := s.user.Create(folder, nil); err != nil {
		t.Fatal(err)
	}
}

// selfSigned makes a certificate for 127.0.0.1 that is its own root.
func selfSigned() (tls.Certificate, *x509.CertPool, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "imaptest"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	roots := x509.NewCertPool()
	roots.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, roots, nil
}
