package identityapi

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/opencrm/crm/pkg/contract/envelope"
	"github.com/opencrm/crm/pkg/contract/route"
	"github.com/opencrm/crm/pkg/timestamp"
)

// The audit log: identity keeps one append-only, hash-chained log of the
// security-relevant actions of every context. Identity appends its own
// (logins, sessions, users, teams, keys, tokens) in the transaction of the
// action; the other contexts write an AuditMessage into their outbox on
// AuditStream (pkg/audit), which identity consumes and appends once each.

// AuditStream is the stream the contexts' audit entries travel on. It is
// not one of the crm:events:* streams (outbox.StreamPrefix): those feed
// the public webhooks and the events feed, and an audit entry must never
// reach an integrator.
const AuditStream = "crm:audit"

// AuditEventType is the outbox type of every AuditMessage.
const AuditEventType = "audit.entry"

// Audit actions: what an entry records.
const (
	AuditLoginSucceeded    = "login.succeeded"
	AuditLoginFailed       = "login.failed"
	AuditSessionRevoked    = "session.revoked"
	AuditUserCreated       = "user.created"
	AuditUserUpdated       = "user.updated"
	AuditUserDeactivated   = "user.deactivated"
	AuditRoleChanged       = "role.changed"
	AuditEditScopeChanged  = "edit_scope.changed"
	AuditTeamCreated       = "team.created"
	AuditTeamUpdated       = "team.updated"
	AuditTeamDeleted       = "team.deleted"
	AuditAPIKeyCreated     = "api_key.created"
	AuditAPIKeyRevoked     = "api_key.revoked"
	AuditTokenCreated      = "token.created"
	AuditTokenRevoked      = "token.revoked"
	AuditSigningKeyRotated = "signing_key.rotated"
	AuditExportRan         = "export.ran"
	AuditImportRan         = "import.ran"
	AuditRecordDeleted     = "record.deleted"
	AuditRecordsMerged     = "records.merged"
	AuditPersonErased      = "person.erased"
	AuditWebhookCreated    = "webhook.created"
	AuditWebhookUpdated    = "webhook.updated"
	AuditWebhookDeleted    = "webhook.deleted"
	AuditWebhookRotated    = "webhook.secret_rotated"
	AuditTemplateCreated   = "template.created"
	AuditTemplateUpdated   = "template.updated"
	AuditTemplateDeleted   = "template.deleted"
	AuditFieldCreated      = "custom_field.created"
	AuditFieldUpdated      = "custom_field.updated"
	AuditFieldDeleted      = "custom_field.deleted"
)

// A person's export or erasure was asked for (pkg/contract/privacyapi);
// the entry names the request and the address's keyed hash, never the
// address.
const (
	AuditPersonExportRequested  = "person.export_requested"
	AuditPersonErasureRequested = "person.erasure_requested"
)

// AuditActions is every action, in the document's order: the values the
// action filter accepts.
var AuditActions = []string{
	AuditLoginSucceeded, AuditLoginFailed, AuditSessionRevoked,
	AuditUserCreated, AuditUserUpdated, AuditUserDeactivated, AuditRoleChanged, AuditEditScopeChanged,
	AuditTeamCreated, AuditTeamUpdated, AuditTeamDeleted,
	AuditAPIKeyCreated, AuditAPIKeyRevoked, AuditTokenCreated, AuditTokenRevoked, AuditSigningKeyRotated,
	AuditExportRan, AuditImportRan, AuditRecordDeleted, AuditRecordsMerged, AuditPersonErased,
	AuditPersonExportRequested, AuditPersonErasureRequested,
	AuditWebhookCreated, AuditWebhookUpdated, AuditWebhookDeleted, AuditWebhookRotated,
	AuditTemplateCreated, AuditTemplateUpdated, AuditTemplateDeleted,
	AuditFieldCreated, AuditFieldUpdated, AuditFieldDeleted,
}

// Audit actor kinds: those of record history (historyapi.Actor*), and
// anonymous for a failed login, whose author is not known.
const AuditActorAnonymous = "anonymous"

// AuditActor is who acted: a person (user), an integration token (token,
// the id of its service user), the public intake's API key (api_key), the
// system, or nobody known (anonymous: a failed login). The shape of
// historyapi.HistoryActor.
type AuditActor struct {
	Type string `json:"type" enum:"user,token,api_key,system,anonymous" example:"user"`
	ID   *int64 `json:"id,omitempty" example:"7"`
	Name string `json:"name,omitempty" example:"Ann Lee"`
}

// AuditTarget is what an action was done to.
type AuditTarget struct {
	Object string `json:"object" example:"user"`
	ID     string `json:"id" example:"12"`
}

// AuditEntry is one entry of the audit log.
type AuditEntry struct {
	ID     int64          `json:"id" minimum:"1" example:"1042"`
	At     timestamp.Time `json:"at"`
	Actor  AuditActor     `json:"actor"`
	Action string         `json:"action" example:"login.failed"`
	// Target is null for an action on nothing in particular (a failed
	// login for an unknown email, a key rotation).
	Target  *AuditTarget    `json:"target" nullable:"true"`
	Details json.RawMessage `json:"details" description:"What the action changed or used: the fields changed (changes, with from and to), an export's filters and row count, a failed login's email and reason." example:"{\"email\":\"sam@example.com\",\"reason\":\"wrong_password\"}"`
	// IP and UserAgent are the client's, as identity saw them (logins);
	// empty for the other contexts' entries.
	IP        string `json:"ip" example:"203.0.113.7"`
	UserAgent string `json:"user_agent" example:"Mozilla/5.0"`
	RequestID string `json:"request_id" example:"9b2f6c1e-3d4a-4b8e-a0c2-5f7e8d9a1b2c"`
	// Context is the bounded context that recorded the action.
	Context  string `json:"context" example:"identity"`
	PrevHash string `json:"prev_hash" description:"SHA-256 (hex) of the previous entry; 64 zeros for the first." example:"5e8f...1c"`
	Hash     string `json:"hash" description:"SHA-256 (hex) of prev_hash and this entry's fields." example:"a41b...0d"`
}

// AuditPage is a page of the audit log, newest first.
type AuditPage struct {
	Success   bool         `json:"success" const:"true"`
	Data      []AuditEntry `json:"data" nullable:"false"`
	HasMore   bool         `json:"has_more" description:"Older entries follow next_after."`
	NextAfter *int64       `json:"next_after" description:"The id to pass as ?after= for the next (older) page: the last entry of this page; null when the page is empty." example:"1017"`
}

// AuditVerification answers VerifyAuditLog.
type AuditVerification struct {
	OK      bool  `json:"ok"`
	Checked int64 `json:"checked" description:"Entries checked." example:"1042"`
	// FirstBroken is the first entry whose hash or link does not hold, or
	// the first missing id.
	FirstBroken *int64 `json:"first_broken" nullable:"true" example:"17"`
	Reason      string `json:"reason,omitempty" enum:"hash,link,missing" description:"Why first_broken breaks the chain: its hash is not that of its fields (hash), its prev_hash is not the previous entry's hash (link), or entries before it or at the end are missing (missing)."`
}

// AuditMaxPerPage bounds per_page of the audit log.
const AuditMaxPerPage = 100

// AuditQuery is ListAuditLog's parameters.
var AuditQuery = []route.Param{
	{Name: "actor", Type: "integer", Desc: "Entries of this user (a person's or an integration token's service user id).", Min: new(1)},
	{Name: "action", Type: "string", Desc: "Entries of this action.", Enum: AuditActions},
	{Name: "from", Type: "string", Desc: "Entries at or after this RFC 3339 time.", Format: "date-time"},
	{Name: "to", Type: "string", Desc: "Entries before this RFC 3339 time.", Format: "date-time"},
	{Name: "after", Type: "integer", Desc: "Cursor: entries older than this entry id (the next_after of the previous page).", Min: new(1)},
	{Name: "per_page", Type: "integer", Desc: "Entries per page, default 25, at most 100.", Min: new(1), Max: new(AuditMaxPerPage), Default: 25},
}

// The audit log's routes (admin only, scope admin). No route changes it.
var (
	ListAuditLog = route.Route{Method: http.MethodGet, Path: "/audit-log", Service: Service, Auth: route.Admin,
		Tag: "Audit log", Summary: "The audit log, newest first: logins, sessions, access changes, keys and tokens, exports, imports, deletes, definitions",
		Query: AuditQuery, Response: AuditPage{}}
	VerifyAuditLog = route.Route{Method: http.MethodGet, Path: "/audit-log/verify", Service: Service, Auth: route.Admin,
		Tag: "Audit log", Summary: "Check the audit log's hash chain; names the first broken entry",
		Response: envelope.Record[AuditVerification]{}}
)

// AuditMessage is an audit entry as a context sends it on AuditStream
// (pkg/audit writes it). Source is unique per entry: identity appends each
// once however often it is delivered.
type AuditMessage struct {
	// Context is the sending context; Source the entry's id there.
	Context   string          `json:"context"`
	Source    string          `json:"source"`
	At        time.Time       `json:"at"`
	Actor     AuditActor      `json:"actor"`
	Action    string          `json:"action"`
	Target    *AuditTarget    `json:"target,omitempty"`
	Details   json.RawMessage `json:"details,omitempty"`
	IP        string          `json:"ip,omitempty"`
	UserAgent string          `json:"user_agent,omitempty"`
	RequestID string          `json:"request_id,omitempty"`
}
