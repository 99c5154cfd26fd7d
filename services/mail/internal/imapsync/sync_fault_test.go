package imapsync_test

import (
	"context"
	"errors"
	"io"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/services/mail/internal/imapsync"
	"github.com/opencrm/crm/services/mail/internal/mail"
)

// cutProxy forwards TCP connections to an upstream and, while cut > 0,
// resets each connection once the upstream has sent cut bytes through it:
// an IMAP session torn in the middle of a FETCH.
type cutProxy struct {
	ln       net.Listener
	upstream string
	cut      atomic.Int64
	wg       sync.WaitGroup
}

func startCutProxy(t *testing.T, upstream string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, upstream: upstream}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() { _ = ln.Close(); p.wg.Wait() })
	return p
}

func (p *cutProxy) port() int { return p.ln.Addr().(*net.TCPAddr).Port }

func (p *cutProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.serve(c.(*net.TCPConn))
		}()
	}
}

func (p *cutProxy) serve(c *net.TCPConn) {
	defer c.Close()
	u, err := net.Dial("tcp", p.upstream)
	if err != nil {
		return
	}
	defer u.Close()
	go func() { _, _ = io.Copy(u, c); _ = u.Close() }()
	limit := p.cut.Load()
	if limit <= 0 {
		_, _ = io.Copy(c, u)
		return
	}
	_, _ = io.CopyN(c, u, limit)
	_ = c.SetLinger(0) // RST, not FIN
}

// TestSyncSurvivesConnectionsCutMidFetch tears the IMAP connection after
// more and more bytes of each session, so syncs fail at every stage (login,
// select, in the middle of a batch's FETCH), then lets a sync finish: every
// message is stored exactly once and the mailbox's position is the last UID.
func TestSyncSurvivesConnectionsCutMidFetch(t *testing.T) {
	t.Parallel()
	e := newEnv(t, imapsync.Options{Batch: 2})
	names := []string{"plain.eml", "alternative.eml", "latin1.eml", "broken.eml"}
	e.appendAll(names...)
	p := startCutProxy(t, net.JoinHostPort(e.imap.Host, strconv.Itoa(e.imap.Port)))
	sealed, err := e.sealer.Seal(password)
	if err != nil {
		t.Fatal(err)
	}
	mb, err := e.store.CreateMailbox(context.Background(), 1, mail.MailboxFields{
		Host: e.imap.Host, Port: p.port(), Username: user, Folder: "INBOX", PasswordSealed: sealed,
	})
	if err != nil {
		t.Fatal(err)
	}
	failed := 0
	for cut := int64(40); cut < 20000; cut = cut*3/2 + 17 {
		p.cut.Store(cut)
		if err := e.syncer.Sync(context.Background(), mb.ID); err != nil && !errors.Is(err, context.Canceled) {
			t.Fatalf("Sync with the connection cut after %d bytes: %v", cut, err)
		}
		m, err := e.store.Mailbox(context.Background(), mb.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		if m.Status == "error" {
			failed++
		}
	}
	if failed == 0 {
		t.Fatalf("no sync failed: the cuts did not reach the sessions")
	}
	t.Logf("%d syncs failed on a cut connection", failed)
	p.cut.Store(0)
	got := stateOf(e.sync(mb.ID))
	if diff := cmp.Diff(state{Status: "ok", UIDValidity: 1, LastUID: uint32(len(names)), Synced: true}, got); diff != "" {
		t.Errorf("after the cuts (-want +got):\n%s", diff)
	}
	want := []string{"<alt-1@example.org>", "<broken-1@example.com>", "<latin1-1@example.fr>", "<plain-1@example.com>"}
	if diff := cmp.Diff(want, slices.Sorted(slices.Values(e.linked(user)))); diff != "" {
		t.Errorf("messages after %d failed syncs, each exactly once (-want +got):\n%s", failed, diff)
	}
}
