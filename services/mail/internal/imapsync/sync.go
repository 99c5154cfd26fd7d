// Package imapsync fetches new messages from a connected IMAP mailbox
// incrementally (by UIDVALIDITY and UID), parses their MIME structure and
// stores them beside the messages posted through the API.
package imapsync

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"

	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/netguard"
	"github.com/opencrm/crm/services/mail/internal/mail"
)

// Options tune a Syncer; zero values take the defaults.
type Options struct {
	// Lease bounds one sync run; another worker may take the mailbox
	// after it (default 10 min).
	Lease time.Duration `env:"MAIL_SYNC_TIMEOUT" envDefault:"10m"`
	// DialTimeout bounds connecting and the TLS handshake (default 15 s).
	DialTimeout time.Duration
	// GreetingTimeout bounds the wait for the server's IMAP greeting once
	// connected (default 8 s). A server on an implicit-TLS port (993)
	// reached without TLS waits for a handshake and never greets; without
	// this bound the mailbox stayed pending for a minute (62 s measured,
	// on go-imap's own read timeouts). 8 s leaves room for the queue's
	// pickup, so the error shows within 10 s of connecting the mailbox,
	// and is far more than a working server needs to greet.
	GreetingTimeout time.Duration `env:"MAIL_IMAP_GREETING_TIMEOUT" envDefault:"8s"`
	// Batch is how many messages are fetched per round trip (default 25).
	Batch int
	// MaxRawBytes is the most of one message read from the server
	// (default 25 MB); the rest is discarded.
	MaxRawBytes int64
	// BlockPrivate refuses to connect to loopback, private and link-local
	// addresses, so a user cannot aim the server at the cluster's insides.
	// Read from the environment, it is on unless the operator turns it
	// off: secure by default.
	BlockPrivate bool `env:"MAIL_IMAP_BLOCK_PRIVATE" envDefault:"true"`
	// TLSConfig overrides the TLS settings (tests: a private root CA).
	TLSConfig *tls.Config
}

func (o *Options) defaults() {
	if o.Lease <= 0 {
		o.Lease = 10 * time.Minute
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = 15 * time.Second
	}
	if o.GreetingTimeout <= 0 {
		o.GreetingTimeout = 8 * time.Second
	}
	if o.Batch <= 0 {
		o.Batch = 25
	}
	if o.MaxRawBytes <= 0 {
		o.MaxRawBytes = 25 << 20
	}
}

// Syncer runs one mailbox sync at a time per call; calls for different
// mailboxes may run concurrently.
type Syncer struct {
	store  mail.Store
	sealer *mail.Sealer
	opts   Options
	log    *slog.Logger
}

// New returns a syncer storing into store.
func New(store mail.Store, sealer *mail.Sealer, opts Options, log *slog.Logger) (*Syncer, error) {
	if store == nil || sealer == nil || log == nil {
		return nil, errors.New("imapsync: store, sealer and log are required")
	}
	opts.defaults()
	return &Syncer{store: store, sealer: sealer, opts: opts, log: log}, nil
}

// Sync fetches what is new in the mailbox. Failures of the mailbox (host
// down, wrong password, missing folder) are recorded on it and are not
// errors of the call: the next scheduled sync simply tries again. Only a
// failure to record the outcome is returned.
func (s *Syncer) Sync(ctx context.Context, id int64) error {
	mb, token, ok, err := s.store.AcquireSync(ctx, id, s.opts.Lease)
	if errors.Is(err, fault.NotFound("")) {
		return nil // disconnected meanwhile
	}
	if err != nil {
		return err
	}
	if !ok {
		s.log.DebugContext(ctx, "mailbox sync already running", "mailbox_id", id)
		return nil
	}
	runCtx, cancel := context.WithTimeout(ctx, s.opts.Lease-time.Second)
	out, stored := s.run(runCtx, mb, token)
	cancel()
	if out.Err != "" {
		s.log.WarnContext(ctx, "mailbox sync failed", "mailbox_id", id, "stored", stored, "error", out.Err)
	} else {
		s.log.InfoContext(ctx, "mailbox synced", "mailbox_id", id, "stored", stored, "last_uid", out.LastUID)
	}
	return s.store.FinishSync(context.WithoutCancel(ctx), id, token, out)
}

// run does the IMAP work. Error texts in the outcome are written here, in
// fixed words, never from server answers or Go errors that could carry a
// username, password or server banner.
func (s *Syncer) run(ctx context.Context, mb mail.MailboxSecret, token int64) (mail.SyncOutcome, int) {
	out := mail.SyncOutcome{UIDValidity: mb.UIDValidity, LastUID: mb.LastUID}
	fail := func(msg string, err error) (mail.SyncOutcome, int) {
		if err != nil {
			s.log.DebugContext(ctx, "mailbox sync error", "mailbox_id", mb.ID, "cause", redact(err.Error(), mb.Username))
		}
		out.Err = msg
		return out, 0
	}
	password, err := s.sealer.Open(mb.PasswordSealed)
	if err != nil {
		return fail(err.Error(), nil)
	}
	addr := net.JoinHostPort(strings.Trim(mb.Host, "[]"), strconv.Itoa(mb.Port))
	c, err := s.dial(ctx, addr, mb)
	if err != nil {
		return fail(dialError(addr, err), err)
	}
	defer c.Close()
	// The client has its own read timeouts; closing it also unblocks any
	// command when the run's deadline passes.
	stop := context.AfterFunc(ctx, func() { _ = c.Close() })
	defer stop()

	greeting := time.AfterFunc(s.opts.GreetingTimeout, func() { _ = c.Close() })
	err = c.WaitGreeting()
	if !greeting.Stop() {
		// Timed out, and the connection is closed, whatever WaitGreeting
		// returned meanwhile.
		return fail(greetingTimeout(addr, s.opts.GreetingTimeout, mb.TLS), err)
	}
	if err != nil {
		return fail(fmt.Sprintf("the server at %s did not answer as an IMAP server", addr), err)
	}
	if err := c.Login(mb.Username, password).Wait(); err != nil {
		var ie *imap.Error
		if errors.As(err, &ie) {
			return fail("login failed: the server rejected the username or password", nil)
		}
		return fail(fmt.Sprintf("the connection to %s failed during login", addr), err)
	}
	sel, err := c.Select(mb.Folder, &imap.SelectOptions{ReadOnly: true}).Wait()
	if err != nil {
		return fail(fmt.Sprintf("folder %q cannot be opened", mb.Folder), err)
	}
	if sel.UIDValidity != out.UIDValidity {
		// The server renumbered the folder: old UIDs mean nothing now.
		// Start over; message_id dedupe makes the re-read harmless.
		out.UIDValidity, out.LastUID = sel.UIDValidity, 0
	}
	if sel.NumMessages == 0 {
		return out, 0
	}
	var set imap.UIDSet
	set.AddRange(imap.UID(out.LastUID)+1, 0)
	found, err := c.UIDSearch(&imap.SearchCriteria{UID: []imap.UIDSet{set}}, nil).Wait()
	if err != nil {
		return fail("searching the folder for new messages failed", err)
	}
	var uids []imap.UID
	for _, u := range found.AllUIDs() {
		if uint32(u) > out.LastUID {
			uids = append(uids, u)
		}
	}
	slices.Sort(uids)
	stored := 0
	for start := 0; start < len(uids); start += s.opts.Batch {
		batch := uids[start:min(start+s.opts.Batch, len(uids))]
		msgs, err := s.fetch(c, batch)
		if err != nil {
			out.Err = "fetching messages failed; the next sync resumes where this one stopped"
			s.log.DebugContext(ctx, "fetch failed", "mailbox_id", mb.ID, "cause", err.Error())
			return out, stored
		}
		for _, f := range msgs {
			if err := s.store1(ctx, mb, f); err != nil {
				out.Err = "storing messages failed; the next sync resumes where this one stopped"
				s.log.ErrorContext(ctx, "store synced message", "mailbox_id", mb.ID, "uid", f.uid, "error", err.Error())
				return out, stored
			}
			out.LastUID = uint32(f.uid)
			stored++
		}
		if err := s.store.Checkpoint(ctx, mb.ID, token, out.UIDValidity, out.LastUID); err != nil {
			s.log.WarnContext(ctx, "sync checkpoint", "mailbox_id", mb.ID, "error", err.Error())
		}
	}
	return out, stored
}

type fetched struct {
	uid      imap.UID
	internal time.Time
	parsed   Parsed
}

// fetch reads one batch of whole messages (BODY.PEEK[], so \Seen is left
// alone) and returns them parsed, in UID order.
func (s *Syncer) fetch(c *imapclient.Client, uids []imap.UID) ([]fetched, error) {
	cmd := c.Fetch(imap.UIDSetNum(uids...), &imap.FetchOptions{
		UID:          true,
		InternalDate: true,
		BodySection:  []*imap.FetchItemBodySection{{Peek: true}},
	})
	// After a failed literal read the connection is broken and the client's
	// reader goroutine has moved on: Close would read the rest of the
	// literal from the same decoder concurrently (a data race in go-imap,
	// found by TestSyncSurvivesConnectionsCutMidFetch under -race), so a
	// broken fetch is abandoned with its connection instead.
	broken := false
	defer func() {
		if !broken {
			_ = cmd.Close()
		}
	}()
	var out []fetched
	for {
		msg := cmd.Next()
		if msg == nil {
			break
		}
		var f fetched
		var raw []byte
		for {
			item := msg.Next()
			if item == nil {
				break
			}
			switch it := item.(type) {
			case imapclient.FetchItemDataUID:
				f.uid = it.UID
			case imapclient.FetchItemDataInternalDate:
				f.internal = it.Time
			case imapclient.FetchItemDataBodySection:
				if it.Literal == nil {
					continue
				}
				var err error
				raw, err = io.ReadAll(io.LimitReader(it.Literal, s.opts.MaxRawBytes))
				if err != nil {
					broken = true
					return nil, err
				}
				if _, err := io.Copy(io.Discard, it.Literal); err != nil {
					broken = true
					return nil, err
				}
			}
		}
		if f.uid == 0 {
			continue
		}
		f.parsed = Parse(raw)
		out = append(out, f)
	}
	if err := cmd.Close(); err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b fetched) int { return int(int64(a.uid) - int64(b.uid)) })
	return out, nil
}

// store1 saves one parsed message; the same message_id again is a no-op.
func (s *Syncer) store1(ctx context.Context, mb mail.MailboxSecret, f fetched) error {
	p := f.parsed
	// A Date header PostgreSQL and RFC 3339 cannot hold (year 10000 once
	// in UTC) falls back like a missing one.
	sent := p.Date
	if sent.IsZero() || !mail.Writable(sent) {
		sent = f.internal
	}
	if sent.IsZero() || !mail.Writable(sent) {
		sent = time.Now()
	}
	dir := mail.Inbound
	if p.From != "" && strings.EqualFold(p.From, mb.Username) {
		dir = mail.Outbound
	}
	id := mb.ID
	_, _, err := s.store.CreateMessage(ctx, mail.NewMessage{
		MessageID: p.MessageID, From: p.From, To: p.To, Cc: p.Cc,
		Subject: p.Subject, BodyText: p.Body, SentAt: sent.UTC(),
		Direction: dir, MailboxID: &id,
	})
	return err
}

func (s *Syncer) dial(ctx context.Context, addr string, mb mail.MailboxSecret) (*imapclient.Client, error) {
	d := &net.Dialer{Timeout: s.opts.DialTimeout}
	if s.opts.BlockPrivate {
		d.Control = netguard.Control
	}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if mb.TLS {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12}
		if s.opts.TLSConfig != nil {
			cfg = s.opts.TLSConfig.Clone()
		}
		if cfg.ServerName == "" {
			cfg.ServerName = strings.Trim(mb.Host, "[]")
		}
		cfg.NextProtos = []string{"imap"}
		tc := tls.Client(conn, cfg)
		hctx, cancel := context.WithTimeout(ctx, s.opts.DialTimeout)
		err := tc.HandshakeContext(hctx)
		cancel()
		if err != nil {
			_ = conn.Close()
			return nil, &tlsError{err}
		}
		conn = tc
	}
	return imapclient.New(conn, nil), nil
}

type tlsError struct{ err error }

func (e *tlsError) Error() string { return "tls: " + e.err.Error() }
func (e *tlsError) Unwrap() error { return e.err }

// dialError describes a connection failure in fixed words.
func dialError(addr string, err error) string {
	var dnsErr *net.DNSError
	var te *tlsError
	var rhe tls.RecordHeaderError
	var ne net.Error
	switch {
	case errors.Is(err, netguard.ErrRefused):
		return fmt.Sprintf("connecting to %s is not allowed (private address)", addr)
	case errors.As(err, &dnsErr):
		return fmt.Sprintf("the host of %s could not be resolved", addr)
	case errors.As(err, &rhe):
		// The server's first bytes are not TLS: most likely a plain IMAP
		// greeting (port 143) answering the handshake.
		return fmt.Sprintf("the server at %s answered without TLS: is the port expecting plain IMAP (tls: false)?", addr)
	case errors.As(err, &te):
		return fmt.Sprintf("the TLS handshake with %s failed", addr)
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Sprintf("the connection to %s was refused", addr)
	case errors.As(err, &ne) && ne.Timeout(), errors.Is(err, context.DeadlineExceeded):
		return fmt.Sprintf("connecting to %s timed out", addr)
	default:
		return fmt.Sprintf("could not connect to %s", addr)
	}
}

// greetingTimeout describes a server that sent no greeting in fixed
// words; without TLS the likely cause is a port expecting TLS.
func greetingTimeout(addr string, d time.Duration, useTLS bool) string {
	msg := fmt.Sprintf("no IMAP greeting from %s within %s", addr, d)
	if !useTLS {
		msg += ": is the port expecting TLS (tls: true)?"
	}
	return msg
}

// redact keeps a username out of debug logs of causes.
func redact(s, username string) string {
	if username == "" {
		return s
	}
	return strings.ReplaceAll(s, username, "[username]")
}
