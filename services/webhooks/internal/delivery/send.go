package delivery

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"syscall"
	"time"

	"github.com/opencrm/crm/pkg/contract/webhooksapi"
	"github.com/opencrm/crm/pkg/netguard"
	"github.com/opencrm/crm/pkg/timestamp"
	"github.com/opencrm/crm/services/webhooks/internal/store"
	"github.com/opencrm/crm/services/webhooks/internal/webhooks"
)

// UserAgent names the platform to receivers.
const UserAgent = "OpenCRM-Webhooks/1"

// MaxResponseBody is how much of a receiver's answer is kept.
const MaxResponseBody = 4096

// Fixed words for the error of an attempt.
const (
	errRedirect   = "redirect not followed"
	errNotAllowed = "address not allowed"
	errTimeout    = "timeout"
	errRefused    = "connection refused"
	errClosed     = "connection closed by the receiver"
	errDNS        = "host name does not resolve"
	errTLS        = "TLS handshake failed"
	errConnect    = "connection failed"
	errBadURL     = "the URL cannot be requested"
	errSecret     = "signing secret cannot be decrypted (was CRM_SECRET_KEY changed?)"
	// Disabled410 is the disabled_reason of a subscription whose receiver
	// answered 410.
	Disabled410 = "receiver answered 410 Gone"
)

// Opener opens sealed signing secrets.
type Opener interface {
	Open(sealed []byte) ([]byte, error)
}

// errStopped is an attempt cut short by the process stopping: nothing is
// recorded, and the task runs again.
var errStopped = errors.New("delivery: stopped mid-attempt")

// Body is the JSON a delivery POSTs.
func Body(j store.Job) ([]byte, string) {
	id := webhooks.PingID(j.ID)
	if j.EventSeq != nil {
		id = webhooks.EventID(*j.EventSeq)
	}
	b, _ := json.Marshal(webhooks.Event{ID: id, Type: j.EventType, SchemaVersion: max(j.SchemaVersion, 1),
		CreatedAt: timestamp.Of(j.OccurredAt), Data: j.Data})
	return b, id
}

// attempt sends j once and classifies the answer; unreachable reports
// that the receiver could not be reached at all (timeout, refused
// connection, DNS or TLS failure), which breaks a batch. A closed
// connection does not: the receiver was there (and may have dropped an
// idle kept-alive connection). It returns errStopped when ctx ended (the
// process is stopping), not the attempt's own timeout.
func (e *Engine) attempt(ctx context.Context, j store.Job) (o store.Outcome, unreachable bool, err error) {
	at := time.Now()
	o, err = e.try(ctx, j)
	o.At = at
	if err == nil && o.StatusCode == nil && o.Error != nil {
		switch *o.Error {
		case errTimeout, errRefused, errDNS, errTLS, errConnect:
			unreachable = true
		}
	}
	return o, unreachable, err
}

func (e *Engine) try(ctx context.Context, j store.Job) (store.Outcome, error) {
	body, id := Body(j)
	secrets := make([]string, 0, 2)
	for _, sealed := range [][]byte{j.Secret, j.PreviousSecret} {
		if sealed == nil {
			continue
		}
		s, err := e.secrets.Open(sealed)
		if err != nil {
			return e.retry(j, store.Outcome{Error: ptr(errSecret)}), nil
		}
		secrets = append(secrets, string(s))
	}
	now := time.Now()
	sig, err := webhooksapi.Sign(secrets, id, now, body)
	if err != nil {
		return e.retry(j, store.Outcome{Error: ptr(errSecret)}), nil
	}
	actx, cancel := context.WithTimeout(ctx, e.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, j.URL, bytes.NewReader(body))
	if err != nil {
		return store.Outcome{Status: webhooks.StatusFailed, Error: ptr(errBadURL)}, nil
	}
	h := req.Header
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", UserAgent)
	h.Set(webhooksapi.HeaderID, id)
	h.Set(webhooksapi.HeaderTimestamp, strconv.FormatInt(now.Unix(), 10))
	h.Set(webhooksapi.HeaderSignature, sig)
	start := time.Now()
	resp, err := e.client.Do(req)
	var answer []byte
	if err == nil {
		answer, _ = io.ReadAll(io.LimitReader(resp.Body, MaxResponseBody))
		_, _ = io.CopyN(io.Discard, resp.Body, 64<<10) // lets the connection be reused
		_ = resp.Body.Close()
	}
	took := time.Since(start)
	e.metrics.attempt.Observe(took.Seconds())
	if ctx.Err() != nil {
		return store.Outcome{}, errStopped
	}
	o := store.Outcome{DurationMS: int(took.Milliseconds())}
	if err != nil {
		o.Error = ptr(dialWords(err))
		if errors.Is(err, netguard.ErrRefused) {
			o.Status = webhooks.StatusFailed
			return o, nil
		}
		return e.retry(j, o), nil
	}
	code := resp.StatusCode
	o.StatusCode = &code
	if len(answer) > 0 {
		s := string(bytes.ToValidUTF8(bytes.ReplaceAll(answer, []byte{0}, nil), []byte("\uFFFD")))
		o.Body = &s
	}
	switch {
	case code >= 200 && code < 300:
		o.Status = webhooks.StatusDelivered
	case code == http.StatusGone:
		o.Status = webhooks.StatusFailed
		o.Error = ptr(Disabled410)
		o.Disable = Disabled410
	case code >= 300 && code < 400:
		o.Status = webhooks.StatusFailed
		o.Error = ptr(errRedirect)
	default:
		o.Error = ptr("receiver answered " + strconv.Itoa(code))
		return e.retry(j, o), nil
	}
	return o, nil
}

// retry makes o a retry after the backoff of j's attempt, or a failure
// when j is a ping (never retried) or has been retried for MaxAge.
func (e *Engine) retry(j store.Job, o store.Outcome) store.Outcome {
	if j.EventSeq == nil || time.Since(j.CreatedAt) >= e.cfg.MaxAge {
		o.Status = webhooks.StatusFailed
		return o
	}
	o.Status = webhooks.StatusPending
	o.NextAttemptAt = time.Now().Add(e.Backoff(j.Attempt + 1))
	return o
}

// Backoff is the wait after the n-th failed attempt (n ≥ 1), jittered.
func (e *Engine) Backoff(n int) time.Duration {
	s := e.cfg.Schedule
	d := s[min(max(n, 1), len(s))-1]
	if e.cfg.Jitter > 0 {
		d = time.Duration(float64(d) * (1 + e.cfg.Jitter*(2*rand.Float64()-1)))
	}
	return d
}

// dialWords names a failed request in fixed words.
func dialWords(err error) string {
	var dnsErr *net.DNSError
	var ne net.Error
	var certErr *tls.CertificateVerificationError
	var recErr tls.RecordHeaderError
	switch {
	case errors.Is(err, netguard.ErrRefused):
		return errNotAllowed
	case errors.Is(err, netguard.ErrLookup), errors.As(err, &dnsErr):
		return errDNS
	case errors.As(err, &certErr), errors.As(err, &recErr):
		return errTLS
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return errTimeout
	case errors.Is(err, syscall.ECONNREFUSED):
		return errRefused
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET):
		return errClosed
	default:
		return errConnect
	}
}

func ptr[T any](v T) *T { return &v }
