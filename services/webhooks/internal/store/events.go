package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/services/webhooks/internal/webhooks"
)

// ingestLock serialises event inserts so seq order is commit order: a
// reader paging the feed with ?after= never skips an event whose
// transaction committed after a later-numbered one.
var ingestLock = db.LockKey("webhooks:events:ingest")

// NewEvent is one event read from a context's stream.
type NewEvent struct {
	Source   string // the context
	SourceID int64  // its outbox id
	// Part numbers the events one outbox row expands into (0 otherwise).
	Part       int
	Type       string
	RecordID   string
	Data       json.RawMessage
	OccurredAt time.Time
}

// Ingest stores ev once; see IngestAll.
func (s *Store) Ingest(ctx context.Context, ev NewEvent) (bool, error) {
	n, err := s.IngestAll(ctx, []NewEvent{ev})
	return n > 0, err
}

// IngestAll stores, in one transaction and in the order given, each of evs
// not stored yet (a second copy of the same outbox row and part is
// ignored) and, for each new one, a pending delivery for every active
// subscription to its type created before it happened. It returns how many
// were new.
func (s *Store) IngestAll(ctx context.Context, evs []NewEvent) (int, error) {
	added := 0
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		added = 0
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, ingestLock); err != nil {
			return err
		}
		for _, ev := range evs {
			data := ev.Data
			if len(data) == 0 || string(data) == "null" {
				data = json.RawMessage(`{}`)
			}
			// Looked up first (under the lock nobody else inserts) so a
			// duplicate does not use up a seq: the ids stay consecutive.
			var seen bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM events WHERE source = $1 AND source_id = $2 AND part = $3)`,
				ev.Source, ev.SourceID, ev.Part).Scan(&seen); err != nil {
				return err
			}
			if seen {
				continue
			}
			var seq int64
			err := tx.QueryRow(ctx, `INSERT INTO events (source, source_id, part, type, record_id, data, occurred_at)
				VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING seq`,
				ev.Source, ev.SourceID, ev.Part, ev.Type, ev.RecordID, data, ev.OccurredAt).Scan(&seq)
			if err != nil {
				return err
			}
			added++
			_, err = tx.Exec(ctx, `INSERT INTO deliveries (subscription_id, event_seq, event_type, record_key)
				SELECT id, $1, $2, $3 FROM subscriptions
				WHERE active AND (events @> ARRAY[$2::text] OR events @> ARRAY['*']) AND created_at <= $4
				ORDER BY id`, seq, ev.Type, ev.Source+":"+ev.RecordID, ev.OccurredAt)
			if err != nil {
				return err
			}
		}
		return nil
	})
	return added, err
}

// Feed returns up to limit events after seq, of the given types (all when
// empty), oldest first, and whether more follow.
func (s *Store) Feed(ctx context.Context, after int64, types []string, limit int) ([]webhooks.Event, bool, error) {
	var tf []string
	if len(types) > 0 {
		tf = types
	}
	rows, err := s.db.Query(ctx, `SELECT seq, type, occurred_at, data FROM events
		WHERE seq > $1 AND ($2::text[] IS NULL OR type = ANY($2)) ORDER BY seq LIMIT $3`, after, tf, limit+1)
	if err != nil {
		return nil, false, err
	}
	evs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (webhooks.Event, error) {
		var e webhooks.Event
		var seq int64
		err := row.Scan(&seq, &e.Type, &e.CreatedAt, &e.Data)
		e.ID = webhooks.EventID(seq)
		return e, err
	})
	if err != nil {
		return nil, false, err
	}
	more := len(evs) > limit
	if more {
		evs = evs[:limit]
	}
	return evs, more, nil
}

// Retention deletes events stored longer than age ago (with their
// deliveries) and finished deliveries created longer than age ago.
func (s *Store) Retention(ctx context.Context, age time.Duration) error {
	if _, err := s.db.Exec(ctx, `DELETE FROM events WHERE stored_at < now() - make_interval(secs => $1)`, age.Seconds()); err != nil {
		return err
	}
	_, err := s.db.Exec(ctx, `DELETE FROM deliveries WHERE status <> 'pending' AND created_at < now() - make_interval(secs => $1)`, age.Seconds())
	return err
}
