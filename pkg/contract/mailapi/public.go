package mailapi

import "github.com/opencrm/crm/pkg/timestamp"

// EmailSummary is a synced message in a list (body cut to a snippet).
type EmailSummary struct {
	ID        int64          `json:"id" minimum:"1" example:"55"`
	MessageID string         `json:"message_id" maxLength:"998" pattern:"^<[\\s\\S]+>$" example:"<abc@mail.example>" description:"The RFC 5322 Message-ID in its bracketed form <left@right>, brackets included in the 998 characters; unique across the store."`
	From      string         `json:"from" example:"ada@example.com"`
	To        []string       `json:"to" nullable:"false" maxItems:"500"`
	Cc        []string       `json:"cc" nullable:"false" maxItems:"500"`
	Subject   string         `json:"subject" maxLength:"998" example:"Proposal"`
	Snippet   string         `json:"snippet"`
	SentAt    timestamp.Time `json:"sent_at"`
	Direction string         `json:"direction" enum:"inbound,outbound" example:"inbound"`
	MailboxID *int64         `json:"mailbox_id" minimum:"1"`
	CreatedAt timestamp.Time `json:"created_at"`
}

// Email is one message with its text body.
type Email struct {
	EmailSummary
	BodyText string `json:"body_text"`
}

// EmailRef is what a caller who may not read a repeated message learns.
type EmailRef struct {
	ID        int64  `json:"id" minimum:"1"`
	MessageID string `json:"message_id" maxLength:"998" pattern:"^<[\\s\\S]+>$" example:"<abc@mail.example>" description:"The stored Message-ID, bracketed: <left@right>."`
}

// EmailInput is the body of StoreEmail.
type EmailInput struct {
	MessageID string   `json:"message_id" minLength:"1" maxLength:"998" example:"<abc@mail.example>" description:"The message's Message-ID header, <left@right>; the brackets are added when left out, so \"abc@mail.example\" and \"<abc@mail.example>\" are one message. At most 998 characters with the brackets."`
	From      string   `json:"from" example:"ada@example.com" description:"The sender; a bare address or one with a display name (\"Ada <ada@example.com>\"), of which only the address is kept."`
	To        []string `json:"to,omitempty" maxItems:"500"`
	Cc        []string `json:"cc,omitempty" maxItems:"500"`
	Subject   string   `json:"subject,omitempty" maxLength:"998"`
	BodyText  string   `json:"body_text,omitempty"`
	SentAt    string   `json:"sent_at,omitempty" format:"date-time"`
	Direction string   `json:"direction,omitempty" enum:"inbound,outbound"`
}

// Mailbox is a connected IMAP mailbox; its password is never returned.
type Mailbox struct {
	ID           int64           `json:"id" minimum:"1" example:"2"`
	OwnerID      int64           `json:"owner_id" minimum:"1"`
	Host         string          `json:"host" example:"imap.example.com"`
	Port         int             `json:"port" minimum:"1" maximum:"65535" example:"993"`
	TLS          bool            `json:"tls" example:"true"`
	Username     string          `json:"username" maxLength:"255"`
	Folder       string          `json:"folder" maxLength:"255" example:"INBOX"`
	Status       string          `json:"status" enum:"pending,ok,error" example:"ok"`
	LastError    *string         `json:"last_error"`
	LastSyncedAt *timestamp.Time `json:"last_synced_at"`
	UIDValidity  uint32          `json:"uidvalidity"`
	LastUID      uint32          `json:"last_uid"`
	CreatedAt    timestamp.Time  `json:"created_at"`
	UpdatedAt    timestamp.Time  `json:"updated_at"`
}

// MailboxInput is the body of ConnectMailbox (host, username, password
// required) and UpdateMailbox.
type MailboxInput struct {
	Host     *string `json:"host,omitempty" maxLength:"255" example:"imap.example.com"`
	Port     *int    `json:"port,omitempty" minimum:"1" maximum:"65535" example:"993"`
	TLS      *bool   `json:"tls,omitempty" example:"true"`
	Username *string `json:"username,omitempty" maxLength:"255"`
	Password *string `json:"password,omitempty" writeOnly:"true" maxLength:"1024"`
	Folder   *string `json:"folder,omitempty" maxLength:"255" example:"INBOX"`
}
