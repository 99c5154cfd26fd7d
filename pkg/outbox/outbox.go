// Package outbox publishes domain events reliably: an event is written in
// the same transaction as the change it describes (Add), and a relay moves
// the rows to a Redis Stream (deleting each once Redis has it). Consumers read with consumer groups
// and acknowledge after handling, so an event survives a crash on either
// side. Delivery is at least once: handlers must be idempotent.
package outbox

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/outbox/migrations"
	"github.com/opencrm/crm/pkg/tracing"
)

// Migrations is the outbox's migration set, for testdb fingerprints.
var Migrations fs.FS = migrations.FS

// Migrate creates or updates the outbox table in d's schema.
func Migrate(ctx context.Context, d *db.DB) error {
	return db.Migrate(ctx, d, "outbox", Migrations)
}

// StreamPrefix names every context's event stream: crm:events:<context>.
const StreamPrefix = "crm:events:"

// Stream returns the stream of a bounded context.
func Stream(context string) string { return StreamPrefix + context }

// SchemaVersion is the version of every event type's data shape today.
// A data shape changes additively only (new fields, which consumers
// ignore until they know them); a change a consumer of the previous
// release could not read takes a new version of that type (a Record's
// SchemaVersion), published beside the old one until no consumer reads
// it (docs/releasing.md). The committed JSON Schema of each
// type (api/events) is its shape at its version.
const SchemaVersion = 1

// Event is what travels on a stream. Consumers decode it ignoring what
// they do not know, fields and event types alike.
type Event struct {
	// ID is the outbox row id, unique within the producing context.
	ID   int64  `json:"id"`
	Type string `json:"type"`
	// SchemaVersion is the version of Data's shape for Type; 0 (absent)
	// on an event relayed by a release before versions, which is 1 (see
	// Version).
	SchemaVersion int             `json:"schema_version"`
	AggregateID   string          `json:"aggregate_id"`
	OccurredAt    time.Time       `json:"occurred_at"`
	Data          json.RawMessage `json:"data"`
	// Trace is the W3C trace context of the change that recorded the
	// event; the consumer's span continues that trace.
	Trace tracing.Carrier `json:"trace,omitempty"`
}

// Version is the version of ev's data shape: SchemaVersion, or 1 for an
// event relayed before versions were.
func (ev Event) Version() int {
	if ev.SchemaVersion < 1 {
		return 1
	}
	return ev.SchemaVersion
}

// Add records an event inside the caller's transaction.
func Add(ctx context.Context, q db.Querier, stream, typ, aggregateID string, data any) error {
	return AddMany(ctx, q, stream, []Record{{Type: typ, AggregateID: aggregateID, Data: data}})
}

// Record is one event for AddMany.
type Record struct {
	Type        string
	AggregateID string
	Data        any
	// SchemaVersion is the version of Data's shape; 0 means SchemaVersion.
	SchemaVersion int
}

// Encoded is event data its writer has already encoded with json.Marshal
// (compact, HTML escaped): AddMany stores it as it is, so a writer that
// needs the same JSON elsewhere (a batch's answer) encodes each record
// once. It encodes as itself wherever else it goes.
type Encoded []byte

// MarshalJSON returns e: it already is json.Marshal's output.
func (e Encoded) MarshalJSON() ([]byte, error) {
	if e == nil {
		return []byte("null"), nil
	}
	return e, nil
}

// copyMin is the number of events from which AddMany sends them as one
// COPY rather than one INSERT … FROM unnest (a batch of 100: see
// docs/benchmarks.md, contact batch upsert); fewer go as the INSERT, as
// single writes always did.
var copyMin = 16 // a variable so that BenchmarkAddMany can compare the two

var copyCols = []string{"stream", "type", "aggregate_id", "payload", "trace", "schema_version"}

// AddMany records events inside the caller's transaction with one
// statement, whatever their number, in the order given (the outbox ids, and
// so the relay, follow that order). Nothing is written when one cannot be
// encoded. Each carries the trace context of ctx.
func AddMany(ctx context.Context, q db.Querier, stream string, recs []Record) error {
	if len(recs) == 0 {
		return nil
	}
	var trace []byte // NULL unless traced
	if c := tracing.Inject(ctx); c != nil {
		trace, _ = json.Marshal(c) // a map of strings always encodes
	}
	types := make([]string, len(recs))
	ids := make([]string, len(recs))
	payloads := make([]string, len(recs))
	versions := make([]int32, len(recs))
	for i, r := range recs {
		raw, ok := r.Data.(Encoded)
		if !ok || raw == nil {
			var err error
			if raw, err = json.Marshal(r.Data); err != nil {
				return fmt.Errorf("outbox: encode %s: %w", r.Type, err)
			}
		}
		types[i], ids[i], payloads[i] = r.Type, r.AggregateID, string(raw)
		versions[i] = int32(max(r.SchemaVersion, 0))
		if versions[i] == 0 {
			versions[i] = SchemaVersion
		}
	}
	if len(recs) >= copyMin {
		rows := make([][]any, len(recs))
		for i := range recs {
			rows[i] = []any{stream, types[i], ids[i], payloads[i], trace, versions[i]}
		}
		if _, err := q.CopyFrom(ctx, pgx.Identifier{"outbox"}, copyCols, pgx.CopyFromRows(rows)); err != nil {
			return fmt.Errorf("outbox: add %d events: %w", len(recs), err)
		}
		return nil
	}
	_, err := q.Exec(ctx, `INSERT INTO outbox (stream, type, aggregate_id, payload, trace, schema_version)
		SELECT $1, t, a, p::json, $5::json, v FROM unnest($2::text[], $3::text[], $4::text[], $6::int[]) WITH ORDINALITY AS u (t, a, p, v, n)
		ORDER BY n`, stream, types, ids, payloads, trace, versions)
	if err != nil {
		return fmt.Errorf("outbox: add %d events: %w", len(recs), err)
	}
	return nil
}

// Tombstone is the payload of a "*.deleted" event: the id and nothing
// else, so a record deleted for good leaves no copy of its personal data
// in the event stream (its earlier events age out with Retention).
func Tombstone(id int64) map[string]int64 { return map[string]int64{"id": id} }

// Relay copies unpublished events to Redis. Several replicas may run one:
// rows are claimed with FOR UPDATE SKIP LOCKED.
type Relay struct {
	DB       *db.DB
	Redis    redis.UniversalClient
	Interval time.Duration
	// MaxLen caps each stream (approximately) so Redis memory stays bounded.
	MaxLen int64
	// Retention trims each stream to events younger than this, 7 days by
	// default: events carry personal data, and a deleted contact's earlier
	// events must not stay in Redis for as long as the stream is short of
	// MaxLen. Rows a previous release kept in the table after publishing
	// them are deleted at the same age.
	Retention time.Duration
	Log       *slog.Logger
}

// DefaultRetention is how long published events stay in the streams.
const DefaultRetention = 7 * 24 * time.Hour

// Run relays until ctx is done.
func (r *Relay) Run(ctx context.Context) {
	interval := r.Interval
	if interval <= 0 {
		interval = 200 * time.Millisecond
	}
	log := r.Log
	if log == nil {
		log = slog.Default()
	}
	lastCleanup := time.Time{}
	for {
		n, err := r.Once(ctx)
		if err != nil && ctx.Err() == nil {
			log.Error("outbox relay failed", "error", err.Error())
		}
		if time.Since(lastCleanup) > time.Hour {
			_, _ = r.DB.Exec(ctx, `DELETE FROM outbox WHERE published_at < now() - make_interval(secs => $1)`,
				r.retention().Seconds())
			lastCleanup = time.Now()
		}
		if n > 0 && err == nil {
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
	}
}

func (r *Relay) retention() time.Duration {
	if r.Retention <= 0 {
		return DefaultRetention
	}
	return r.Retention
}

// Once relays one batch and returns how many events it published.
//
// It deletes the rows it publishes, in the statement that claims them,
// and commits once Redis has them: a published row served nothing but
// the hourly clean-up, and marking it cost a whole new version of the
// row (its payload included) and a new index entry per event, about 1.6×
// the PostgreSQL time of the delete (docs/benchmarks.md, contact batch
// upsert). Rows a previous release marked published instead are deleted
// by Run's clean-up when their retention ends.
func (r *Relay) Once(ctx context.Context) (int, error) {
	maxLen := r.MaxLen
	if maxLen <= 0 {
		maxLen = 1_000_000
	}
	n := 0
	err := r.DB.InTx(ctx, func(tx pgx.Tx) error {
		// Planned on each pass (an unnamed statement), not once per
		// connection: a plan made while the table was small (a full sort
		// under the row locks) stays cached while a backlog grows, and
		// then sorts the whole backlog on disk for each 200 events.
		rows, err := tx.Query(ctx, `DELETE FROM outbox WHERE id IN (SELECT id FROM outbox
				WHERE published_at IS NULL ORDER BY id LIMIT 200 FOR UPDATE SKIP LOCKED)
			RETURNING id, stream, type, aggregate_id, payload, created_at, trace, schema_version`, pgx.QueryExecModeCacheDescribe)
		if err != nil {
			return err
		}
		type row struct {
			stream string
			ev     Event
		}
		batch, err := pgx.CollectRows(rows, func(rw pgx.CollectableRow) (row, error) {
			var x row
			// The payload as the json column holds it (PostgreSQL
			// checked it): a []byte scan copies it, a RawMessage one
			// would decode it again.
			var data []byte
			err := rw.Scan(&x.ev.ID, &x.stream, &x.ev.Type, &x.ev.AggregateID, &data, &x.ev.OccurredAt, &x.ev.Trace, &x.ev.SchemaVersion)
			x.ev.Data = data
			return x, err
		})
		if err != nil || len(batch) == 0 {
			return err
		}
		// RETURNING keeps no order; the stream gets the outbox's.
		slices.SortFunc(batch, func(a, b row) int { return cmp.Compare(a.ev.ID, b.ev.ID) })
		pipe := r.Redis.Pipeline()
		minID := strconv.FormatInt(time.Now().Add(-r.retention()).UnixMilli(), 10)
		streams := map[string]bool{}
		for _, x := range batch {
			body, err := encodeEvent(x.ev)
			if err != nil {
				return err
			}
			// Exact, not "~": approximate trimming drops only whole
			// radix nodes, so a few old events could outlive the window.
			// The type beside the event lets a consumer that follows a
			// few types skip the others undecoded (Consumer.Types).
			pipe.XAdd(ctx, &redis.XAddArgs{Stream: x.stream, MinID: minID,
				Values: []any{"event", body, "type", x.ev.Type}})
			streams[x.stream] = true
		}
		// XADD trims by one rule; the length cap is the second.
		for stream := range streams {
			pipe.XTrimMaxLenApprox(ctx, stream, maxLen, 0)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return fmt.Errorf("outbox: xadd: %w", err)
		}
		n = len(batch)
		return nil
	})
	return n, err
}

// encodeEvent is json.Marshal(ev), byte for byte. A relay encodes every
// event, whose data is most of it: encoding/json compacts (and checks)
// the data's bytes through its scanner, while data that is compact
// already, without HTML characters it would escape, is its own output —
// as the events AddMany writes (json.Marshal's output) are. Such data is
// copied; any other falls back to json.Marshal.
func encodeEvent(ev Event) ([]byte, error) {
	if !plainCompact(ev.Data) {
		return json.Marshal(ev)
	}
	typ, err := json.Marshal(ev.Type)
	if err != nil {
		return nil, err
	}
	agg, err := json.Marshal(ev.AggregateID)
	if err != nil {
		return nil, err
	}
	at, err := ev.OccurredAt.MarshalJSON()
	if err != nil {
		return json.Marshal(ev) // the error json.Marshal gives
	}
	out := make([]byte, 0, len(ev.Data)+len(typ)+len(agg)+len(at)+128)
	out = strconv.AppendInt(append(out, `{"id":`...), ev.ID, 10)
	out = append(append(out, `,"type":`...), typ...)
	out = strconv.AppendInt(append(out, `,"schema_version":`...), int64(ev.SchemaVersion), 10)
	out = append(append(out, `,"aggregate_id":`...), agg...)
	out = append(append(out, `,"occurred_at":`...), at...)
	out = append(append(out, `,"data":`...), ev.Data...)
	if len(ev.Trace) > 0 {
		tr, err := json.Marshal(ev.Trace)
		if err != nil {
			return nil, err
		}
		out = append(append(out, `,"trace":`...), tr...)
	}
	return append(out, '}'), nil
}

// plainCompact reports whether data, a JSON text PostgreSQL accepted, is
// what encoding/json's compaction makes of it: no white space outside
// strings and nothing it escapes (<, >, &, U+2028, U+2029). Empty data
// is not (json.Marshal refuses it).
func plainCompact(data []byte) bool {
	if len(data) == 0 {
		return false
	}
	in := false
	for i := 0; i < len(data); i++ {
		switch c := data[i]; {
		case c == '<' || c == '>' || c == '&':
			return false
		case c == 0xE2 && i+2 < len(data) && data[i+1] == 0x80 && (data[i+2] == 0xA8 || data[i+2] == 0xA9):
			return false
		case in && c == '\\':
			i++ // the escaped character, a quote included
		case c == '"':
			in = !in
		case !in && (c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			return false
		}
	}
	return !in
}

// Handler processes one event; returning an error leaves it pending for a retry.
type Handler func(ctx context.Context, ev Event) error

// BatchHandler processes the events of one read (up to 100) at once, in
// stream order; returning an error leaves all of them pending for a retry.
// It suits a consumer that stores what it reads, in one transaction per
// read instead of one per event.
type BatchHandler func(ctx context.Context, evs []Event) error

// Consumer reads a stream in a consumer group.
type Consumer struct {
	Redis  redis.UniversalClient
	Stream string
	Group  string
	Name   string
	Handle Handler
	// HandleBatch, when set, is used instead of Handle.
	HandleBatch BatchHandler
	Log         *slog.Logger
	// RetryIdle is how long a failed or orphaned event waits before it is
	// claimed again.
	RetryIdle time.Duration
	// Reads says which events' data shape this consumer can read; nil
	// reads the versions up to SchemaVersion. An event it cannot read (a
	// newer release's version of a type, published beside the version
	// this one knows) is acknowledged without being handled, like an
	// event of a type a handler does not know.
	Reads func(Event) bool
	// Types, when set, are the only event types this consumer handles: a
	// message whose "type" field (the relay writes it beside the event)
	// names another is acknowledged without being decoded, as a handler
	// would ignore it. A message without the field, relayed by an earlier
	// release, is decoded and handled as before.
	Types []string
}

// skips reports whether m is of a type c does not handle (see Types).
func (c *Consumer) skips(m redis.XMessage) bool {
	if len(c.Types) == 0 {
		return false
	}
	t, ok := m.Values["type"].(string)
	return ok && !slices.Contains(c.Types, t)
}

// reads reports whether c handles ev (see Reads).
func (c *Consumer) reads(ev Event) bool {
	if c.Reads != nil {
		return c.Reads(ev)
	}
	return ev.Version() <= SchemaVersion
}

// Run consumes until ctx is done. The group starts at the beginning of the
// stream, so a new consumer sees history that Redis still holds.
func (c *Consumer) Run(ctx context.Context) {
	log := c.Log
	if log == nil {
		log = slog.Default()
	}
	idle := c.RetryIdle
	if idle <= 0 {
		idle = 15 * time.Second
	}
	for ctx.Err() == nil {
		if err := c.Redis.XGroupCreateMkStream(ctx, c.Stream, c.Group, "0").Err(); err != nil &&
			!strings.Contains(err.Error(), "BUSYGROUP") {
			log.Warn("event consumer cannot create group", "stream", c.Stream, "error", err.Error())
			sleep(ctx, 2*time.Second)
			continue
		}
		break
	}
	lastClaim := time.Now()
	for ctx.Err() == nil {
		if time.Since(lastClaim) > idle {
			c.reclaim(ctx, idle, log)
			lastClaim = time.Now()
		}
		res, err := c.Redis.XReadGroup(ctx, &redis.XReadGroupArgs{
			Group: c.Group, Consumer: c.Name, Streams: []string{c.Stream, ">"}, Count: 100, Block: 2 * time.Second,
		}).Result()
		if err != nil {
			if errors.Is(err, redis.Nil) || ctx.Err() != nil {
				continue
			}
			if strings.Contains(err.Error(), "NOGROUP") {
				_ = c.Redis.XGroupCreateMkStream(ctx, c.Stream, c.Group, "0").Err()
				continue
			}
			log.Warn("event consumer read failed", "stream", c.Stream, "error", err.Error())
			sleep(ctx, time.Second)
			continue
		}
		for _, s := range res {
			c.process(ctx, s.Messages, log)
		}
	}
}

func (c *Consumer) reclaim(ctx context.Context, idle time.Duration, log *slog.Logger) {
	msgs, _, err := c.Redis.XAutoClaim(ctx, &redis.XAutoClaimArgs{
		Stream: c.Stream, Group: c.Group, Consumer: c.Name, MinIdle: idle, Start: "0-0", Count: 100,
	}).Result()
	if err != nil {
		return
	}
	c.process(ctx, msgs, log)
}

func (c *Consumer) process(ctx context.Context, msgs []redis.XMessage, log *slog.Logger) {
	if c.HandleBatch != nil {
		c.processBatch(ctx, msgs, log)
		return
	}
	// Every message but a failed one is acknowledged, with one XACK for
	// the read rather than one round trip per event: a consumer that
	// follows a few types of a busy stream (deals: companies in contacts'
	// stream) ignores most of what it reads, and a contacts batch puts
	// 100 events on the stream per call. A crash before the XACK hands
	// the read's events out again, which at-least-once delivery allows.
	done := make([]string, 0, len(msgs))
	for _, m := range msgs {
		if c.skips(m) {
			done = append(done, m.ID)
			continue
		}
		raw, _ := m.Values["event"].(string)
		var ev Event
		if err := json.Unmarshal([]byte(raw), &ev); err != nil {
			log.Error("dropping undecodable event", "stream", c.Stream, "id", m.ID)
			done = append(done, m.ID)
			continue
		}
		if !c.reads(ev) {
			done = append(done, m.ID)
			continue
		}
		if err := c.handle(ctx, ev); err != nil {
			log.Warn("event handler failed; will retry", "stream", c.Stream, "type", ev.Type, "event_id", strconv.FormatInt(ev.ID, 10), "error", err.Error())
			continue
		}
		done = append(done, m.ID)
	}
	if len(done) > 0 {
		// Handled events are acknowledged even while shutting down, so
		// they are not handled a second time after a restart.
		_ = c.Redis.XAck(context.WithoutCancel(ctx), c.Stream, c.Group, done...).Err()
	}
}

// processBatch hands every decodable message of msgs to HandleBatch and
// acknowledges them all (and the undecodable ones) when it succeeds.
func (c *Consumer) processBatch(ctx context.Context, msgs []redis.XMessage, log *slog.Logger) {
	if len(msgs) == 0 {
		return
	}
	evs := make([]Event, 0, len(msgs))
	ids := make([]string, 0, len(msgs))
	for _, m := range msgs {
		ids = append(ids, m.ID)
		if c.skips(m) {
			continue // acknowledged with the others
		}
		raw, _ := m.Values["event"].(string)
		var ev Event
		if err := json.Unmarshal([]byte(raw), &ev); err != nil {
			log.Error("dropping undecodable event", "stream", c.Stream, "id", m.ID)
			continue
		}
		if !c.reads(ev) {
			continue // acknowledged with the others
		}
		evs = append(evs, ev)
	}
	if len(evs) > 0 {
		ctx, span := tracing.Start(ctx, c.Stream+" process", trace.SpanKindConsumer)
		if span.IsRecording() {
			span.SetAttributes(attribute.String("messaging.system", "redis_streams"),
				attribute.String("messaging.destination.name", c.Stream),
				attribute.String("messaging.consumer.group.name", c.Group),
				attribute.Int("messaging.batch.message_count", len(evs)))
		}
		err := c.HandleBatch(ctx, evs)
		tracing.End(span, err)
		if err != nil {
			log.Warn("event handler failed; will retry", "stream", c.Stream, "events", len(evs), "error", err.Error())
			return
		}
	}
	_ = c.Redis.XAck(context.WithoutCancel(ctx), c.Stream, c.Group, ids...).Err()
}

// handle runs the handler under a consumer span continuing the trace that
// recorded the event.
func (c *Consumer) handle(ctx context.Context, ev Event) error {
	ctx, span := tracing.Start(tracing.Extract(ctx, ev.Trace), c.Stream+" process", trace.SpanKindConsumer)
	if span.IsRecording() {
		span.SetAttributes(attribute.String("messaging.system", "redis_streams"),
			attribute.String("messaging.destination.name", c.Stream),
			attribute.String("messaging.consumer.group.name", c.Group),
			attribute.String("crm.event.type", ev.Type), attribute.Int64("crm.event.id", ev.ID))
	}
	err := c.Handle(ctx, ev)
	tracing.End(span, err)
	return err
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// ConsumerName names this process within a consumer group (host-pid), so
// replicas share a group's work and a restarted process does not inherit a
// dead one's identity.
func ConsumerName() string {
	host, _ := os.Hostname()
	return host + "-" + strconv.Itoa(os.Getpid())
}
