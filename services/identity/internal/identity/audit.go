package identity

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/outbox"
)

// Reasons of a failed login (login.failed's details.reason).
const (
	FailedUnknownAccount = "unknown_account"
	FailedWrongPassword  = "wrong_password"
	FailedInactive       = "inactive"
	// FailedChanged is a password checked right while the account's
	// password changed or it was deactivated.
	FailedChanged = "changed"
)

// FailedLogin is a refused login attempt for the audit log.
type FailedLogin struct {
	Email  string
	UserID *int64
	Reason string
}

// AuditFilter selects audit entries: by actor (a user id), action, time
// (From inclusive, To exclusive) and cursor (entries older than After);
// PerPage entries a page.
type AuditFilter struct {
	Actor    *int64
	Action   string
	From, To *time.Time
	After    *int64
	PerPage  int
}

// AuditLog is the append-only audit log. Identity's own writes append to
// it in their transactions (the other ports); these read it, append the
// other contexts' entries and record failed logins, which change nothing
// else.
type AuditLog interface {
	// AuditEntries returns f's entries newest first, at most PerPage+1.
	AuditEntries(ctx context.Context, f AuditFilter) ([]identityapi.AuditEntry, error)
	// VerifyAudit checks the whole hash chain.
	VerifyAudit(ctx context.Context) (identityapi.AuditVerification, error)
	// AppendAudit appends entries of other contexts, each (context,
	// source) once, and says how many were new.
	AppendAudit(ctx context.Context, msgs []identityapi.AuditMessage) (int, error)
	// LoginFailed records a refused login.
	LoginFailed(ctx context.Context, f FailedLogin) error
}

// AuditLog returns a page of the audit log, newest first, and whether
// older entries follow.
func (s *Service) AuditLog(ctx context.Context, f AuditFilter) ([]identityapi.AuditEntry, bool, error) {
	entries, err := s.store.AuditEntries(ctx, f)
	if err != nil {
		return nil, false, err
	}
	if len(entries) > f.PerPage {
		return entries[:f.PerPage], true, nil
	}
	return entries, false, nil
}

// VerifyAuditLog checks the audit log's hash chain.
func (s *Service) VerifyAuditLog(ctx context.Context) (identityapi.AuditVerification, error) {
	return s.store.VerifyAudit(ctx)
}

// AppendAudit is the outbox.BatchHandler of identityapi.AuditStream: it
// appends the other contexts' entries of one read in one transaction,
// each once however often it is delivered. An undecodable message is
// dropped (logged); one without a source is keyed by its outbox id. An
// event of another type (a newer release's) is not an entry: it is
// ignored, and acknowledged with the others.
func (s *Service) AppendAudit(ctx context.Context, evs []outbox.Event) error {
	msgs := make([]identityapi.AuditMessage, 0, len(evs))
	for _, ev := range evs {
		if ev.Type != identityapi.AuditEventType {
			continue
		}
		var m identityapi.AuditMessage
		if err := json.Unmarshal(ev.Data, &m); err != nil || m.Action == "" {
			s.log.Error("dropping an unreadable audit entry", "type", ev.Type, "event_id", ev.ID)
			continue
		}
		if m.Context == "" {
			m.Context = "unknown"
		}
		if m.Source == "" {
			m.Source = "outbox:" + strconv.FormatInt(ev.ID, 10)
		}
		if m.At.IsZero() {
			m.At = ev.OccurredAt
		}
		msgs = append(msgs, m)
	}
	if len(msgs) == 0 {
		return nil
	}
	_, err := s.store.AppendAudit(ctx, msgs)
	return err
}
