package mail

import (
	"net/netip"
	"regexp"
	"strings"

	"github.com/opencrm/crm/pkg/contract/mailapi"
	"github.com/opencrm/crm/pkg/validate"
)

// DefaultFolder is synced when a mailbox names none.
const DefaultFolder = "INBOX"

// MaxPassword bounds an IMAP password; longer is not a password.
const MaxPassword = 1024

var hostname = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]{0,62})(\.[A-Za-z0-9]([A-Za-z0-9-]{0,62}))*\.?$`)

// MailboxInput is a mailbox's connection settings as a client sends them,
// to connect a mailbox or change one. Pointers tell an absent field from a
// zero one: on a change an absent port, tls, folder or password keeps its
// value.
type MailboxInput = mailapi.MailboxInput

// validated is a checked MailboxInput; password is "" when unchanged.
type validated struct {
	fields   MailboxFields
	password string
}

// validateMailbox checks in against the current mailbox (nil on create).
// host and username are required on both; password on create, and on an
// update that would send the stored password elsewhere (redirects).
func validateMailbox(in MailboxInput, cur *Mailbox) (validated, error) {
	var v validate.Errors
	var out validated
	f := &out.fields
	f.Host = strings.TrimSpace(deref(in.Host))
	if v.Required("host", f.Host) && !validHost(f.Host) {
		v.Add("host", "must be a host name or IP address")
	}
	f.Username = strings.TrimSpace(deref(in.Username))
	if v.Required("username", f.Username) {
		v.MaxLen("username", f.Username, validate.MaxString)
	}
	f.TLS = true
	if cur != nil {
		f.TLS = cur.TLS
	}
	if in.TLS != nil {
		f.TLS = *in.TLS
	}
	switch {
	case in.Port != nil:
		f.Port = *in.Port
		if f.Port < 1 || f.Port > 65535 {
			v.Add("port", "must be between 1 and 65535")
		}
	case cur != nil:
		f.Port = cur.Port
	case f.TLS:
		f.Port = 993
	default:
		f.Port = 143
	}
	f.Folder = strings.TrimSpace(deref(in.Folder))
	if f.Folder == "" {
		f.Folder = DefaultFolder
		if cur != nil && in.Folder == nil {
			f.Folder = cur.Folder
		}
	}
	if v.MaxLen("folder", f.Folder, validate.MaxString) && strings.ContainsAny(f.Folder, "\r\n\x00") {
		v.Add("folder", "must not contain control characters")
	}
	switch {
	case in.Password != nil:
		out.password = *in.Password
		if out.password == "" {
			v.Add("password", "is required")
		} else if len(out.password) > MaxPassword || strings.ContainsAny(out.password, "\r\n\x00") {
			v.Add("password", "must be at most %d bytes without line breaks", MaxPassword)
		}
	case cur == nil:
		v.Add("password", "is required")
	case redirects(*cur, *f) && !v.Has("host") && !v.Has("port") && !v.Has("username"):
		// The stored password would be sent to another server or account,
		// or in clear: whoever asks must know it.
		v.Add("password", "is required when host, port or username change or tls is turned off")
	}
	return out, v.Err()
}

// redirects reports whether the next sync under f would send the stored
// password of cur somewhere it was not sent before: another host, port or
// account, or over plain IMAP. Compared exactly, so a case-only change of
// the host also needs the password (failing safe).
func redirects(cur Mailbox, f MailboxFields) bool {
	return f.Host != cur.Host || f.Port != cur.Port || f.Username != cur.Username || (cur.TLS && !f.TLS)
}

func validHost(h string) bool {
	if len(h) > 253 {
		return false
	}
	if _, err := netip.ParseAddr(strings.Trim(h, "[]")); err == nil {
		return true
	}
	return hostname.MatchString(h)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
