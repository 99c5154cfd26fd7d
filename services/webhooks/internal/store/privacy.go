package store

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/contract/privacyapi"
	"github.com/opencrm/crm/pkg/timestamp"
	"github.com/opencrm/crm/services/webhooks/internal/webhooks"
)

// A person's part of the webhooks context (privacyapi, served by
// pkg/privacy): the events of the feed about them and the deliveries of
// those events. The payload of a delivery is its event's, built when it
// is sent, so redacting the event redacts every delivery still to come;
// what a delivery stores of its own is the receiver's response body.
//
// An event is the person's when it is about one of their contacts or
// leads (a contact.* event of a contact in ContactIDs, a lead.* event of a
// lead in LeadIDs: the record id the event was published for), about a
// contract of one of their deals (DealIDs), or when
// its payload quotes their address (case-insensitively, as an address of
// its own: "joann@x.example" does not quote "ann@x.example"). No index
// serves the address: finding it reads every event the feed holds, which
// the retention sweep bounds (WEBHOOKS_RETENTION, 30 days by default);
// an index on the record ids would spare nothing, since the address scan
// reads the table anyway, and every ingest would pay for it.

// PrivacyEvent is one of the person's events as their export lists it.
type PrivacyEvent struct {
	ID         string          `json:"id"`
	Type       string          `json:"type"`
	OccurredAt timestamp.Time  `json:"occurred_at"`
	Payload    json.RawMessage `json:"payload"`
}

// PrivacyDelivery is a delivery of one of the person's events: where it
// went and how it went, not its payload (the event's).
type PrivacyDelivery struct {
	ID             int64           `json:"id"`
	EventID        string          `json:"event_id"`
	SubscriptionID int64           `json:"subscription_id"`
	Status         string          `json:"status"`
	AttemptedAt    *timestamp.Time `json:"attempted_at"`
}

// PrivacyExport is the webhooks context's export document.
type PrivacyExport struct {
	Events     []PrivacyEvent    `json:"events"`
	Deliveries []PrivacyDelivery `json:"deliveries"`
}

// personEvents selects the person's events ($1 contact ids and $2 lead
// ids as text, $3 the lower-cased address, $4 its pattern, $5 the deals
// their contacts were party to), oldest first. A contract's events carry
// its content, which merged the party's name and details: those of the
// person's deals are theirs even where the address does not appear.
// strpos is the cheap test; the pattern only runs on what passes it.
const personEvents = `FROM events
	WHERE (type LIKE 'contact.%' AND record_id = ANY($1::text[]))
		OR (type LIKE 'lead.%' AND record_id = ANY($2::text[]))
		OR (type LIKE 'contract.%' AND data->>'deal_id' = ANY($5::text[]))
		OR (strpos(lower(data::text), $3) > 0 AND data::text ~* $4)`

// personArgs are personEvents' arguments for s.
func personArgs(s privacyapi.Subject) []any {
	addr := strings.ToLower(strings.TrimSpace(s.Email))
	return []any{texts(s.ContactIDs), texts(s.LeadIDs), addr, addressPattern(addr), texts(s.DealIDs)}
}

func texts(ids []int64) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = strconv.FormatInt(id, 10)
	}
	return out
}

// addressPattern is a PostgreSQL regular expression matching addr where it
// stands as an address of its own: not preceded by a character an address
// holds, not followed by one (a dot only where a longer domain follows).
func addressPattern(addr string) string {
	return `(^|[^a-z0-9._%+-])` + regexp.QuoteMeta(addr) + `($|[^a-z0-9_.-]|\.$|\.[^a-z0-9])`
}

// Export answers the person's events and their deliveries.
func (s *Store) Export(ctx context.Context, sub privacyapi.Subject) (privacyapi.ExportPart, error) {
	out := PrivacyExport{Events: []PrivacyEvent{}, Deliveries: []PrivacyDelivery{}}
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		// One snapshot: the deliveries are those of the events listed.
		if _, err := tx.Exec(ctx, `SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY`); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT seq, type, occurred_at, data `+personEvents+` ORDER BY seq`, personArgs(sub)...)
		if err != nil {
			return err
		}
		var seqs []int64
		out.Events, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (PrivacyEvent, error) {
			var e PrivacyEvent
			var seq int64
			var at time.Time
			err := row.Scan(&seq, &e.Type, &at, &e.Payload)
			e.ID, e.OccurredAt = webhooks.EventID(seq), timestamp.Of(at)
			seqs = append(seqs, seq)
			return e, err
		})
		if err != nil {
			return err
		}
		rows, err = tx.Query(ctx, `SELECT id, event_seq, subscription_id, status, last_attempt_at
			FROM deliveries WHERE event_seq = ANY($1) ORDER BY id`, seqs)
		if err != nil {
			return err
		}
		out.Deliveries, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (PrivacyDelivery, error) {
			var d PrivacyDelivery
			var seq int64
			var at *time.Time
			err := row.Scan(&d.ID, &seq, &d.SubscriptionID, &d.Status, &at)
			d.EventID, d.AttemptedAt = webhooks.EventID(seq), timestamp.Ptr(at)
			return d, err
		})
		return err
	})
	if err != nil {
		return privacyapi.ExportPart{}, fmt.Errorf("store: privacy export: %w", err)
	}
	data, err := json.Marshal(out)
	if err != nil {
		return privacyapi.ExportPart{}, err
	}
	return privacyapi.ExportPart{Data: data}, nil
}

// Erase redacts the person's events: every value of their payload but
// ids and timestamps becomes "[erased]" (privacy_redact, migration 006),
// so the feed and every delivery still to be sent carry none of it; and
// the response bodies their deliveries stored (a receiver may echo what it
// was sent) become "[erased]". It keeps the person's contact and lead ids
// (erased_records), so an event about them still on its way is stored
// redacted. It answers Redacted{"events", "deliveries"}: the events and
// deliveries it changed, so a second erasure answers zeros.
func (s *Store) Erase(ctx context.Context, tx pgx.Tx, sub privacyapi.Subject) (privacyapi.ErasePart, error) {
	if _, err := tx.Exec(ctx, `
		INSERT INTO erased_records (object, record_id)
		SELECT 'contact', unnest($1::text[]) UNION SELECT 'lead', unnest($2::text[])
		ON CONFLICT DO NOTHING`, texts(sub.ContactIDs), texts(sub.LeadIDs)); err != nil {
		return privacyapi.ErasePart{}, fmt.Errorf("store: privacy erase: records: %w", err)
	}
	rows, err := tx.Query(ctx, `SELECT seq `+personEvents+` ORDER BY seq FOR UPDATE`, personArgs(sub)...)
	if err != nil {
		return privacyapi.ErasePart{}, fmt.Errorf("store: privacy erase: %w", err)
	}
	seqs, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return privacyapi.ErasePart{}, fmt.Errorf("store: privacy erase: %w", err)
	}
	if len(seqs) == 0 {
		return privacyapi.ErasePart{Receipt: privacyapi.Receipt{
			Redacted: map[string]int64{"events": 0, "deliveries": 0},
		}}, nil
	}
	// A payload redacted before is left alone, and not counted.
	tag, err := tx.Exec(ctx, `UPDATE events SET data = privacy_redact(data)
		WHERE seq = ANY($1) AND data <> privacy_redact(data)`, seqs)
	if err != nil {
		return privacyapi.ErasePart{}, fmt.Errorf("store: privacy erase: events: %w", err)
	}
	var deliveries int64
	if err := tx.QueryRow(ctx, `
		WITH d AS (
			UPDATE deliveries SET response_body = $2
			WHERE event_seq = ANY($1) AND response_body <> '' AND response_body <> $2
			RETURNING id
		), a AS (
			UPDATE delivery_attempts SET response_body = $2
			WHERE delivery_id IN (SELECT id FROM deliveries WHERE event_seq = ANY($1))
				AND response_body <> '' AND response_body <> $2
			RETURNING delivery_id
		)
		SELECT count(*) FROM (SELECT id FROM d UNION SELECT delivery_id FROM a) changed`,
		seqs, privacyapi.Erased).Scan(&deliveries); err != nil {
		return privacyapi.ErasePart{}, fmt.Errorf("store: privacy erase: deliveries: %w", err)
	}
	return privacyapi.ErasePart{Receipt: privacyapi.Receipt{
		Redacted: map[string]int64{"events": tag.RowsAffected(), "deliveries": deliveries},
	}}, nil
}
