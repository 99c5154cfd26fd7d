package imapsync

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"html"
	"io"
	netmail "net/mail"
	"regexp"
	"strings"
	"time"

	"github.com/emersion/go-message"
	// Registers every charset golang.org/x/text knows (ISO-8859-*,
	// Windows-125x, Shift_JIS...) with go-message's decoder.
	_ "github.com/emersion/go-message/charset"
	gomail "github.com/emersion/go-message/mail"

	"github.com/opencrm/crm/services/mail/internal/mail"
)

// maxParts bounds the MIME tree walked per message; a message with more
// parts is an attack or a mistake, and its first parts hold the text.
const maxParts = 100

// Parsed is what a raw RFC 5322 message yields for the store.
type Parsed struct {
	MessageID string
	From      string
	To, Cc    []string
	Subject   string
	Body      string
	// Date is the Date header in UTC; zero when it is missing or is no
	// date (see parseDate).
	Date time.Time
}

// Parse reads a raw message as far as it can: a broken part, an unknown
// charset or a bad header costs that piece only, never the whole message,
// because the user cannot repair a message already in their mailbox.
func Parse(raw []byte) Parsed {
	var p Parsed
	e, err := message.Read(bytes.NewReader(raw))
	if e == nil {
		// Not even a header block: keep the bytes as text.
		_ = err
		p.Body = mail.Clean(string(raw))
		p.MessageID = syntheticID(raw)
		return p
	}
	h := gomail.Header{Header: e.Header}
	if id, err := h.MessageID(); err == nil && id != "" {
		p.MessageID = id
	} else if v := strings.TrimSpace(h.Get("Message-Id")); v != "" {
		p.MessageID = v
	}
	if p.MessageID == "" {
		p.MessageID = syntheticID(raw)
	}
	if from := addresses(h, "From"); len(from) > 0 {
		p.From = from[0]
	}
	p.To = addresses(h, "To")
	p.Cc = addresses(h, "Cc")
	if s, err := h.Subject(); err == nil || s != "" {
		p.Subject = s
	}
	if d, ok := parseDate(h.Get("Date")); ok {
		p.Date = d
	}
	var w walker
	w.walk(e, 0)
	switch {
	case len(w.plain) > 0:
		p.Body = strings.Join(w.plain, "\n\n")
	case len(w.html) > 0:
		p.Body = htmlToText(strings.Join(w.html, "\n\n"))
	}
	p.Body = strings.ReplaceAll(p.Body, "\r\n", "\n")
	p.Body = mail.Truncate(mail.Clean(p.Body), mail.MaxBodyBytes)
	p.Subject = mail.TruncateRunes(strings.TrimSpace(mail.Clean(p.Subject)), mail.MaxSubject)
	// Stored as a posted message is (mail.NormalizeMessageID):
	// "<left@right>", brackets included in the length limit.
	p.MessageID = mail.NormalizeMessageID(mail.TruncateRunes(mail.Clean(mail.NormalizeMessageID(p.MessageID)), mail.MaxMessageID))
	if p.MessageID == "" {
		// "<>", "< >" or only NUL bytes: nothing is left, and an empty
		// id would make every such message a duplicate of the first.
		p.MessageID = "<" + syntheticID(raw) + ">"
	}
	return p
}

// syntheticID names a message without a Message-ID by its content, so the
// same message synced twice (a UIDVALIDITY reset) is still one row.
func syntheticID(raw []byte) string {
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:16]) + "@no-message-id.invalid"
}

// addresses parses an address header leniently: when the list as a whole
// is malformed, each comma-separated piece that parses on its own is kept.
func addresses(h gomail.Header, key string) []string {
	var out []string
	if list, err := h.AddressList(key); err == nil {
		for _, a := range list {
			out = append(out, a.Address)
		}
		return capList(out)
	}
	dec := netmail.AddressParser{}
	for _, piece := range strings.Split(h.Get(key), ",") {
		if a, err := dec.Parse(strings.TrimSpace(piece)); err == nil {
			out = append(out, a.Address)
		}
	}
	return capList(out)
}

func capList(l []string) []string {
	if len(l) > mail.MaxRecipients {
		l = l[:mail.MaxRecipients]
	}
	for i, a := range l {
		l[i] = mail.Clean(a)
	}
	return l
}

// walker collects the inline text/plain and text/html parts of a MIME tree.
type walker struct {
	plain, html []string
	parts       int
	size        int
}

func (w *walker) walk(e *message.Entity, depth int) {
	w.parts++
	if w.parts > maxParts || depth > 20 || w.size > mail.MaxBodyBytes {
		return
	}
	if mr := e.MultipartReader(); mr != nil {
		for {
			part, err := mr.NextPart()
			if part == nil && err != nil {
				// End of the parts, or a boundary we cannot find: keep
				// what was read so far. An unknown charset or encoding
				// still yields a readable part (err set, part not nil).
				return
			}
			w.walk(part, depth+1)
		}
	}
	disp, _, _ := e.Header.ContentDisposition()
	if disp == "attachment" {
		return
	}
	mt, _, err := e.Header.ContentType()
	if err != nil && e.Header.Get("Content-Type") != "" {
		return
	}
	if mt == "" {
		mt = "text/plain"
	}
	if mt != "text/plain" && mt != "text/html" {
		return
	}
	// ReadAll returns what it read before a decoding error (bad base64,
	// truncated quoted-printable): a broken part keeps its readable start.
	b, _ := io.ReadAll(io.LimitReader(e.Body, int64(mail.MaxBodyBytes-w.size)+1))
	w.size += len(b)
	text := strings.TrimSpace(mail.Clean(string(b)))
	if text == "" {
		return
	}
	if mt == "text/html" {
		w.html = append(w.html, text)
	} else {
		w.plain = append(w.plain, text)
	}
}

var (
	htmlDrop  = regexp.MustCompile(`(?is)<(script|style|head)\b.*?</(script|style|head)\s*>`)
	htmlBreak = regexp.MustCompile(`(?i)<\s*(br|/p|/div|/li|/tr|/h[1-6])\b[^>]*>`)
	htmlTag   = regexp.MustCompile(`(?s)<[^>]*>`)
	blankRuns = regexp.MustCompile(`\n[ \t]*\n(\s*\n)+`)
)

// htmlToText turns an HTML-only body into readable text: the CRM stores
// text, never markup a browser could run.
func htmlToText(s string) string {
	s = htmlDrop.ReplaceAllString(s, "")
	s = htmlBreak.ReplaceAllString(s, "\n")
	s = htmlTag.ReplaceAllString(s, "")
	s = html.UnescapeString(s)
	s = blankRuns.ReplaceAllString(s, "\n\n")
	return strings.TrimSpace(s)
}
