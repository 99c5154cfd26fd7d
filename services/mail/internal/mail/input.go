package mail

import (
	"fmt"
	"net/mail"
	"strings"
	"time"

	"github.com/opencrm/crm/pkg/contract/mailapi"
	"github.com/opencrm/crm/pkg/validate"
)

// MessageInput is a message as a client sends it to be stored.
type MessageInput = mailapi.EmailInput

// ValidateMessage checks every field of in at once and returns the message to store.
// Addresses may be bare (a@b.example) or carry a display name
// ("Ann <a@b.example>"); only the address is kept. sent_at defaults to
// now, direction to inbound.
func ValidateMessage(in MessageInput, now time.Time) (NewMessage, error) {
	var v validate.Errors
	m := NewMessage{
		MessageID: NormalizeMessageID(Clean(in.MessageID)),
		Subject:   strings.TrimSpace(Clean(in.Subject)),
		BodyText:  Clean(in.BodyText),
		Direction: in.Direction,
		SentAt:    now.UTC(),
	}
	if v.Required("message_id", m.MessageID) {
		v.MaxLen("message_id", m.MessageID, MaxMessageID)
	}
	if v.Required("from", in.From) {
		if a, ok := parseAddress(in.From); ok {
			m.From = a
		} else {
			v.Add("from", "must be a valid email address")
		}
	}
	m.To = addressList(&v, "to", in.To)
	m.Cc = addressList(&v, "cc", in.Cc)
	v.MaxLen("subject", m.Subject, MaxSubject)
	if len(m.BodyText) > MaxBodyBytes {
		v.Add("body_text", "must be at most %d bytes", MaxBodyBytes)
	}
	if m.Direction == "" {
		m.Direction = Inbound
	}
	v.OneOf("direction", m.Direction, Inbound, Outbound)
	if s := strings.TrimSpace(in.SentAt); s != "" {
		t, err := time.Parse(time.RFC3339Nano, s)
		switch {
		case err != nil:
			v.Add("sent_at", "must be an RFC 3339 timestamp such as 2026-11-22T03:10:26Z")
		case !Writable(t):
			v.Add("sent_at", "must lie between the years 0001 and 9999 in UTC")
		default:
			m.SentAt = t.UTC().Truncate(time.Microsecond)
		}
	}
	return m, v.Err()
}

func addressList(v *validate.Errors, field string, in []string) []string {
	if len(in) > MaxRecipients {
		v.Add(field, "must hold at most %d addresses", MaxRecipients)
		return nil
	}
	out := make([]string, 0, len(in))
	for i, s := range in {
		a, ok := parseAddress(s)
		if !ok {
			v.Add(fmt.Sprintf("%s[%d]", field, i), "must be a valid email address")
			continue
		}
		out = append(out, a)
	}
	return out
}

// parseAddress accepts one RFC 5322 mailbox and returns its bare address,
// which must also pass the platform's email rule.
func parseAddress(s string) (string, bool) {
	s = strings.TrimSpace(s)
	if s == "" || len(s) > 512 {
		return "", false
	}
	a, err := mail.ParseAddress(s)
	if err != nil || !validate.IsEmail(a.Address) {
		return "", false
	}
	return a.Address, true
}

// Writable reports whether t, in UTC at PostgreSQL's microsecond
// precision, has a year the API's timestamp format writes (four digits,
// 0001 to 9999). A time beyond, such as 9999-12-31T23:59:59-23:59, would be
// stored and then answered as a year-10000 timestamp that no RFC 3339
// client reads.
func Writable(t time.Time) bool {
	y := t.UTC().Truncate(time.Microsecond).Year()
	return y >= 1 && y <= 9999
}
