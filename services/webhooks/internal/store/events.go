package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/contract/webhooksapi"
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
	// SchemaVersion is the version of Data's shape (the stream event's);
	// 0 means 1.
	SchemaVersion int
}

// Ingest stores ev once; see IngestAll.
func (s *Store) Ingest(ctx context.Context, ev NewEvent) (bool, error) {
	n, err := s.IngestAll(ctx, []NewEvent{ev})
	return n.Events > 0, err
}

// Ingested is what IngestAll stored: how many events were new, and how
// many deliveries they made due (none while nobody subscribes, when the
// dispatcher has nothing to look for).
type Ingested struct {
	Events     int
	Deliveries int
}

// scopeTypes and scopeGrants are the table the fan-out joins: per event
// type, each scope that lets a token receive it (webhooks.ReadScope and
// what implies it, auth.Granting), one row per pair.
var scopeTypes, scopeGrants = func() (types, grants []string) {
	for _, t := range webhooksapi.EventTypes {
		for _, g := range auth.Granting(webhooks.ReadScope(t)) {
			types, grants = append(types, t), append(grants, g)
		}
	}
	return types, grants
}()

// IngestAll stores, in one statement and in the order given, each of evs
// not stored yet (a second copy of the same outbox row and part, in the
// table or within evs, is ignored) and, for each new one, a pending
// delivery for every active subscription to its type created before it
// happened whose owner may read it (an admin person's, or a token's whose
// scopes grant the type's read scope: a "*" subscription of a token gets
// only those types).
func (s *Store) IngestAll(ctx context.Context, evs []NewEvent) (Ingested, error) {
	n := len(evs)
	sources, types, records := make([]string, n), make([]string, n), make([]string, n)
	ids, parts := make([]int64, n), make([]int32, n)
	data, occurred := make([]string, n), make([]time.Time, n)
	versions := make([]int32, n)
	for i, ev := range evs {
		sources[i], ids[i], parts[i], types[i], records[i], occurred[i] = ev.Source, ev.SourceID, int32(ev.Part), ev.Type, ev.RecordID, ev.OccurredAt
		versions[i] = int32(max(ev.SchemaVersion, 1))
		data[i] = string(ev.Data)
		if len(ev.Data) == 0 || string(ev.Data) == "null" {
			data[i] = `{}`
		}
	}
	var added Ingested
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, ingestLock); err != nil {
			return err
		}
		// Under the lock nobody else inserts, so filtering out what is
		// stored already means no insert conflicts: no seq is used up and
		// the ids stay consecutive. The deliveries are numbered in event
		// order, which the per-record order of delivery relies on.
		//
		// Planned at each execution (an unnamed statement), not once per
		// connection: a generic plan made while the table was small
		// hashed every stored event to filter a read of 100, so each
		// read cost more as the feed grew (webhooks' PostgreSQL CPU for
		// 100,000 events: 3.9 s, then 12.9 s, then 38.7 s with 200,000
		// stored, on a server with autovacuum off).
		return tx.QueryRow(ctx, `WITH input AS (
				SELECT DISTINCT ON (source, source_id, part) *
				FROM unnest($1::text[], $2::bigint[], $3::int[], $4::text[], $5::text[], $6::jsonb[], $7::timestamptz[], $10::int[])
					WITH ORDINALITY AS u (source, source_id, part, type, record_id, data, occurred_at, schema_version, n)
				ORDER BY source, source_id, part, n
			), fresh AS (
				SELECT i.* FROM input i WHERE NOT EXISTS (SELECT 1 FROM events e
					WHERE e.source = i.source AND e.source_id = i.source_id AND e.part = i.part)
			), ins AS (
				INSERT INTO events (source, source_id, part, type, record_id, data, occurred_at, schema_version)
				SELECT source, source_id, part, type, record_id, data, occurred_at, schema_version FROM fresh ORDER BY n
				RETURNING seq, source, type, record_id, occurred_at
			), dl AS (
				INSERT INTO deliveries (subscription_id, event_seq, event_type, record_key)
				SELECT s.id, ins.seq, ins.type, ins.source || ':' || ins.record_id
				FROM ins CROSS JOIN LATERAL (
						SELECT array_agg(m.scope) AS scopes FROM unnest($8::text[], $9::text[]) AS m (type, scope)
						WHERE m.type = ins.type) g
				JOIN subscriptions s ON s.active AND (s.events @> ARRAY[ins.type] OR s.events @> ARRAY['*'])
					AND s.created_at <= ins.occurred_at
					AND (s.owner_scopes IS NULL OR s.owner_scopes && g.scopes)
				ORDER BY ins.seq, s.id
				RETURNING 1
			)
			SELECT (SELECT count(*) FROM ins), (SELECT count(*) FROM dl)`, pgx.QueryExecModeCacheDescribe,
			sources, ids, parts, types, records, data, occurred,
			scopeTypes, scopeGrants, versions).Scan(&added.Events, &added.Deliveries)
	})
	return added, err
}

// Feed returns up to limit events after seq, of the given types (all when
// nil, none when empty: a token that may read no type), oldest first, and
// whether more follow.
func (s *Store) Feed(ctx context.Context, after int64, types []string, limit int) ([]webhooks.Event, bool, error) {
	rows, err := s.db.Query(ctx, `SELECT seq, type, schema_version, occurred_at, data FROM events
		WHERE seq > $1 AND ($2::text[] IS NULL OR type = ANY($2)) ORDER BY seq LIMIT $3`, after, types, limit+1)
	if err != nil {
		return nil, false, err
	}
	evs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (webhooks.Event, error) {
		var e webhooks.Event
		var seq int64
		err := row.Scan(&seq, &e.Type, &e.SchemaVersion, &e.CreatedAt, &e.Data)
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
