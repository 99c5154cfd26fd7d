package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/proccpu"
)

const (
	batchRows    = 100_000
	batchSize    = 100 // batchapi.MaxInputs
	batchClients = 4
	// singleCreates is how many plain creates each side of the
	// "custom fields defined or not" comparison makes, split over
	// singleRounds alternating rounds.
	singleCreates = 2_000
	singleRounds  = 2
	// batchRounds of the API, each between two raw COPYs.
	batchRounds = 2
)

// batchFields are the contact custom fields an ERP sync carries. erp_id
// is the ERP's own customer number, unique, so it is the external id: an
// ERP sync upserts by id_property=erp_id, not by email, because the ERP
// is the system of record for its numbers while a customer's email
// changes, is missing or is shared by a household or a front desk, and
// the sync must update the same contact when it does.
var batchFields = []map[string]any{
	{"name": "erp_id", "label": "ERP id", "type": "text", "unique": true},
	{"name": "erp_tier", "label": "ERP tier", "type": "enum", "options": []map[string]any{
		{"value": "gold", "label": "Gold"}, {"value": "silver", "label": "Silver"}, {"value": "bronze", "label": "Bronze"}}},
	{"name": "credit_limit", "label": "Credit limit", "type": "number"},
	{"name": "customer_since", "label": "Customer since", "type": "date"},
}

// batchValues are row i's custom-field values in the canonical forms the
// service stores (numbers and dates as strings, no trailing zeros), so the
// raw COPY writes the very jsonb the API writes (checked below).
func batchValues(i int) map[string]string {
	return map[string]string{
		"erp_id":         fmt.Sprintf("ERP-%07d", i),
		"erp_tier":       []string{"gold", "silver", "bronze"}[i%3],
		"credit_limit":   fmt.Sprintf("%d.5", 1000+i%5000),
		"customer_since": time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, i%2000).Format(time.DateOnly),
	}
}

// BenchmarkContactBatchUpsert, in one run against the contacts table as
// the other benchmarks leave it (it seeds nothing and leaves it so):
//
//   - 100,000 new contacts with four custom-field values (enum, number,
//     date and the unique erp_id) through POST /contacts/batch/upsert:
//     1,000 calls of 100 inputs by id_property=erp_id from 4 concurrent
//     clients, each call with its own Idempotency-Key, against the
//     physical limit — one committed COPY of the same 100,000 rows (same
//     columns, same custom_fields jsonb) into contacts.contacts itself,
//     with its indexes and triggers, plus the erp_id claims. Target: the
//     API ≤ 2 × the raw COPY's wall time. COPY and API alternate, COPY
//     first and last, batchRounds API rounds (the COPYs' mean is the
//     baseline, and each round is also shown against the COPYs on either
//     side), each side starting from the same table: the other's rows
//     deleted, vacuumed, checkpointed.
//   - a plain single create (POST /contacts, no custom fields, 4 clients)
//     before the installation has custom fields and after, in alternating
//     rounds: target after/before ≥ 0.9.
//
// The unique field's claims (custom_field_unique) are written by the
// service, not by the table (pkg/customfield.Claim runs in each record
// write's transaction), so the raw side writes them too, in the COPY's
// transaction: one INSERT … SELECT of the new rows' erp_id values. What the
// raw side leaves out is the service's own bookkeeping: one outbox row per
// contact (the contact.created event) and one idempotency_keys row per
// call; the CPU split in the notes shows where the rest goes.
func BenchmarkContactBatchUpsert(b *testing.B) {
	c := superuser(b)
	adm := benchAdmin(b)
	ctx := b.Context()
	var defsBefore int
	if err := c.QueryRow(ctx, `SELECT count(*) FROM contacts.custom_field_definitions WHERE object = 'contacts'`).Scan(&defsBefore); err != nil {
		b.Fatal(err)
	}

	// contact.created events this benchmark caused so far; quiet waits
	// until the webhooks context has stored all of them (the outbox relay
	// and the ingest are done), so no phase pays for the one before. It
	// counts only the events stored since its last look (seq is commit
	// order), so its own polling stays cheap however many are stored.
	var created atomic.Int64
	var seenSeq, stored int64
	if err := c.QueryRow(ctx, `SELECT coalesce(max(seq), 0) FROM webhooks.events`).Scan(&seenSeq); err != nil {
		b.Fatal(err)
	}
	quiet := func() time.Duration {
		t0 := time.Now()
		deadline, last := t0.Add(time.Minute), int64(-1)
		for {
			var pending, more, upTo int64
			if err := c.QueryRow(ctx, `SELECT (SELECT count(*) FROM contacts.outbox WHERE published_at IS NULL),
				count(*), coalesce(max(seq), $1) FROM webhooks.events
				WHERE seq > $1 AND source = 'contacts' AND type = 'contact.created'`,
				seenSeq).Scan(&pending, &more, &upTo); err != nil {
				b.Fatal(err)
			}
			stored, seenSeq = stored+more, upTo
			if pending == 0 && stored >= created.Load() {
				return time.Since(t0)
			}
			if stored != last { // a minute without progress is a stall
				deadline, last = time.Now().Add(time.Minute), stored
			}
			if time.Now().After(deadline) {
				b.Fatalf("events: %d unpublished, %d of %d contact.created stored, none for a minute "+
					"(another stack on the same Redis database? set E2E_REDIS_URL)", pending, stored, created.Load())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	// Access tokens expire within the run: each definition change and each
	// fanOut logs in afresh.
	define := func() {
		adm = benchAdmin(b)
		for _, d := range batchFields {
			adm.mustDo(b, "POST", "/properties/contacts", d, http.StatusCreated)
		}
	}
	undefine := func() {
		adm = benchAdmin(b)
		for _, d := range batchFields {
			if r, err := adm.Do("DELETE", "/properties/contacts/"+d["name"].(string), nil); err != nil || r.Status/100 != 2 {
				b.Fatalf("delete %v: %v %v", d["name"], r, err)
			}
		}
	}

	// Plain single creates, before and after the definitions exist.
	singles := 0
	createAll := func(n int) (time.Duration, []time.Duration) {
		lat, took := fanOut(b, adm, n, func(int) (string, []byte, string) {
			i := singles
			singles++
			body, _ := json.Marshal(map[string]any{"first_name": "Sam", "last_name": fmt.Sprint("Single", i),
				"email": fmt.Sprintf("single%d@bench.test", i), "phone": fmt.Sprintf("+1 777 %07d", i), "source": "web"})
			return "/contacts", body, ""
		}, func(r int, body []byte) error {
			if r != http.StatusCreated {
				return fmt.Errorf("create: %d %.300s", r, body)
			}
			return nil
		})
		created.Add(int64(n))
		return took, lat
	}
	createAll(20) // warm the path
	var singleRows [][]string
	var sumBefore, sumAfter time.Duration
	var latBefore, latAfter []time.Duration
	per := singleCreates / singleRounds
	b.ResetTimer()
	for round := 1; round <= singleRounds; round++ {
		if round > 1 {
			undefine()
		}
		quiet()
		tb, lb := createAll(per)
		define()
		quiet()
		ta, la := createAll(per)
		sumBefore, sumAfter = sumBefore+tb, sumAfter+ta
		latBefore, latAfter = append(latBefore, lb...), append(latAfter, la...)
		rate := func(d time.Duration) float64 { return float64(per) / d.Seconds() }
		singleRows = append(singleRows, []string{strconv.Itoa(round), fmt.Sprintf("%.0f", rate(tb)), ms(pct(lb, 0.5)), ms(pct(lb, 0.95)),
			fmt.Sprintf("%.0f", rate(ta)), ms(pct(la, 0.5)), ms(pct(la, 0.95)), fmt.Sprintf("%.2f", rate(ta)/rate(tb)), proccpu.LoadAvg()})
	}
	b.StopTimer()
	singleRatio := sumBefore.Seconds() / sumAfter.Seconds() // the rates' ratio: same number of creates each side
	singleRows = append(singleRows, []string{"all", fmt.Sprintf("%.0f", float64(singleCreates)/sumBefore.Seconds()),
		ms(pct(latBefore, 0.5)), ms(pct(latBefore, 0.95)), fmt.Sprintf("%.0f", float64(singleCreates)/sumAfter.Seconds()),
		ms(pct(latAfter, 0.5)), ms(pct(latAfter, 0.95)), fmt.Sprintf("**%.2f** (≥ 0.9: %s)", singleRatio, yes(singleRatio >= 0.9)), ""})

	// The same 100,000 contacts for both sides.
	var createdBy int64
	if err := c.QueryRow(ctx, `SELECT created_by FROM contacts.contacts WHERE email = 'single0@bench.test'`).Scan(&createdBy); err != nil {
		b.Fatal(err)
	}
	inputs := make([]map[string]any, batchRows)
	src := make([][]any, batchRows)
	for i := range batchRows {
		first, last, email, phone := fmt.Sprint("Erp", i), fmt.Sprint("Customer", i), fmt.Sprintf("batch%d@bench.test", i), fmt.Sprintf("+1 888 %07d", i)
		vals := batchValues(i)
		inputs[i] = map[string]any{"first_name": first, "last_name": last, "email": email, "phone": phone,
			"status": "active", "source": "erp", "custom_fields": vals}
		src[i] = []any{first, last, email, phone, "active", "erp", createdBy, vals}
	}
	bodies := make([][]byte, batchRows/batchSize)
	for k := range bodies {
		bodies[k], _ = json.Marshal(map[string]any{"id_property": "erp_id", "inputs": inputs[k*batchSize : (k+1)*batchSize]})
	}
	inputs = nil

	// settle removes either side's rows and claims and their dead tuples
	// outside the clock, and analyzes both tables: without statistics on
	// custom_field_unique the planner answers the service's external-id
	// lookup (object, name, value) from the (object, record_id) index,
	// scanning every claim of the object per lookup (see the report).
	settle := func() {
		exec1(b, c, `SET search_path = contacts, public`) // the delete triggers name tables unqualified
		exec1(b, c, `DELETE FROM contacts.custom_field_unique WHERE object = 'contacts' AND name = 'erp_id' AND value LIKE 'ERP-%'`)
		exec1(b, c, `DELETE FROM contacts.contacts WHERE email LIKE 'batch%@bench.test'`)
		exec1(b, c, `RESET search_path`)
		exec1(b, c, `VACUUM (ANALYZE) contacts.contacts`)
		exec1(b, c, `VACUUM (ANALYZE) contacts.custom_field_unique`)
		exec1(b, c, `CHECKPOINT`)
	}
	const sampleSQL = `SELECT first_name || '|' || last_name || '|' || phone || '|' || status || '|' || source || '|' ||
		created_by || '|' || custom_fields::text FROM contacts.contacts WHERE email = 'batch12345@bench.test'`
	sample := func() string {
		var s string
		if err := c.QueryRow(ctx, sampleSQL).Scan(&s); err != nil {
			b.Fatal(err)
		}
		return s
	}
	var rawSample string
	// The whole machine's busy CPU over the raw COPYs; an API round's is
	// from its first call until webhooks stored its last event: what the
	// calls cost with everything they set going (relay, Redis, consumers).
	var rawMachine time.Duration
	raw := func() (time.Duration, time.Duration) {
		quiet()
		settle()
		pid := int(c.PgConn().PID())
		before, machine0 := proccpu.Of(pid), proccpu.Machine()
		t0 := time.Now()
		tx, err := c.Begin(ctx)
		if err != nil {
			b.Fatal(err)
		}
		defer tx.Rollback(ctx)
		var maxID int64
		if _, err := tx.Exec(ctx, `SET LOCAL search_path = contacts, public`); err != nil {
			b.Fatal(err)
		}
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(id), 0) FROM contacts.contacts`).Scan(&maxID); err != nil {
			b.Fatal(err)
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"contacts", "contacts"},
			[]string{"first_name", "last_name", "email", "phone", "status", "source", "created_by", "custom_fields"},
			pgx.CopyFromRows(src)); err != nil {
			b.Fatal(err)
		}
		tag, err := tx.Exec(ctx, `INSERT INTO contacts.custom_field_unique (object, name, value, record_id)
			SELECT 'contacts', 'erp_id', custom_fields ->> 'erp_id', id FROM contacts.contacts WHERE id > $1`, maxID)
		if err != nil || tag.RowsAffected() != batchRows {
			b.Fatalf("claims: %v, %d rows", err, tag.RowsAffected())
		}
		if err := tx.Commit(ctx); err != nil {
			b.Fatal(err)
		}
		took := time.Since(t0)
		cpu := proccpu.Of(pid) - before
		rawMachine += proccpu.Machine() - machine0
		rawSample = sample()
		return took, cpu
	}
	// One API round: the 1,000 calls, then until webhooks stored their
	// last event.
	type round struct {
		took, drain, machine time.Duration
		cpu                  cpuSplit
		lat                  []time.Duration
	}
	api := func() round {
		quiet()
		settle()
		cpu0, machine0 := importCPU(b, c), proccpu.Machine()
		run := time.Now().UnixNano()
		var r round
		r.lat, r.took = fanOut(b, adm, len(bodies), func(k int) (string, []byte, string) {
			return "/contacts/batch/upsert", bodies[k], fmt.Sprintf("batchbench-%d-%d", run, k)
		}, func(r int, body []byte) error {
			if n := bytes.Count(body, []byte(`"status":"created"`)); r != http.StatusOK || n != batchSize {
				return fmt.Errorf("upsert: %d, %d created: %.300s", r, n, body)
			}
			return nil
		})
		r.cpu = importCPU(b, c).since(cpu0)
		created.Add(batchRows)
		r.drain = quiet()
		r.machine = proccpu.Machine() - machine0
		var claims int
		if err := c.QueryRow(ctx, `SELECT count(*) FROM contacts.custom_field_unique WHERE object = 'contacts' AND name = 'erp_id'
			AND value LIKE 'ERP-%'`).Scan(&claims); err != nil || claims != batchRows {
			b.Fatalf("claims after the API: %v, %d", err, claims)
		}
		if got := sample(); got != rawSample {
			b.Fatalf("the API and the raw COPY wrote different rows:\nAPI %s\nraw %s", got, rawSample)
		}
		return r
	}

	// COPY, API, COPY, API, COPY: each API round against the COPYs on
	// either side of it, so a machine that slows or speeds up during the
	// run moves both sides of a ratio.
	b.ResetTimer()
	var raws []time.Duration
	var rawCPU []time.Duration
	var rounds []round
	took, cpu := raw()
	raws, rawCPU = append(raws, took), append(rawCPU, cpu)
	for range batchRounds {
		rounds = append(rounds, api())
		took, cpu := raw()
		raws, rawCPU = append(raws, took), append(rawCPU, cpu)
	}
	b.StopTimer()
	settle()

	// Leave the installation as it was: no definitions of ours, no rows.
	undefine()
	exec1(b, c, `SET search_path = contacts, public`)
	exec1(b, c, `DELETE FROM contacts.contacts WHERE email LIKE 'single%@bench.test'`)
	exec1(b, c, `RESET search_path`)
	exec1(b, c, `VACUUM contacts.contacts`)

	secs := func(d time.Duration) string { return fmt.Sprintf("%.2f", d.Seconds()) }
	rps := func(d time.Duration) string { return fmt.Sprintf("%.0f", batchRows/d.Seconds()) }
	var rows int64
	if err := c.QueryRow(ctx, `SELECT count(*) FROM contacts.contacts`).Scan(&rows); err != nil {
		b.Fatal(err)
	}
	var rawSum, rawCPUSum, apiSum, machineSum time.Duration
	for i := range raws {
		rawSum, rawCPUSum = rawSum+raws[i], rawCPUSum+rawCPU[i]
	}
	rawMean, rawCPUMean := rawSum/time.Duration(len(raws)), rawCPUSum/time.Duration(len(raws))
	table := [][]string{{"raw COPY + erp_id claims", "1", secs(raws[0]), rps(raws[0]), "", cpuSecs(rawCPU[0]) + " / — / —"}}
	var notes []string
	for k, r := range rounds {
		apiSum, machineSum = apiSum+r.took, machineSum+r.machine
		around := (raws[k] + raws[k+1]) / 2
		ratio := r.took.Seconds() / around.Seconds()
		table = append(table,
			[]string{fmt.Sprintf("POST /contacts/batch/upsert, round %d", k+1), strconv.Itoa(len(bodies)), secs(r.took), rps(r.took),
				fmt.Sprintf("%.2f", ratio), fmt.Sprintf("%s / %s / %s", cpuSecs(r.cpu.postgres), cpuSecs(r.cpu.service), cpuSecs(r.cpu.gateway))},
			[]string{"raw COPY + erp_id claims", "1", secs(raws[k+1]), rps(raws[k+1]), "", cpuSecs(rawCPU[k+1]) + " / — / —"})
		notes = append(notes, fmt.Sprintf("round %d: call latency p50 %s ms, p95 %s ms, max %s ms; CPU of the API side %.2f× the raw COPY's; "+
			"events all stored %s after the last answer; the whole machine's busy CPU from the first call to the last stored event %s",
			k+1, ms(pct(r.lat, 0.5)), ms(pct(r.lat, 0.95)), ms(pct(r.lat, 1)), r.cpu.total().Seconds()/rawCPUMean.Seconds(),
			r.drain.Round(100*time.Millisecond), cpuSecs(r.machine)))
	}
	apiMean := apiSum / time.Duration(len(rounds))
	ratio := apiMean.Seconds() / rawMean.Seconds()
	machineRatio := (machineSum / time.Duration(len(rounds))).Seconds() / (rawMachine / time.Duration(len(raws))).Seconds()
	table = append(table, []string{"API mean / raw COPY mean", "", "", "", fmt.Sprintf("**%.2f** (≤ 2×: %s)", ratio, yes(ratio <= 2)), ""})
	report(b, fmt.Sprintf("Contact batch upsert of 100,000 new contacts with 4 custom fields through the gateway vs raw COPY (table of %d rows)", rows),
		[]string{"path", "calls", "seconds", "rows/s", "/ raw COPY on either side", "CPU s (PostgreSQL / service / gateway)"}, table)
	note(fmt.Sprintf("Raw: one committed COPY of the same rows (names, email, phone, status, source, created_by, the same custom_fields jsonb — "+
		"checked equal on a sample row) into contacts.contacts with its indexes and triggers, and in the same transaction an INSERT … SELECT of "+
		"their erp_id claims into custom_field_unique (the service writes those, not the table). Not on the raw side: the service's outbox row "+
		"per contact and idempotency_keys row per call. API: `id_property=erp_id`, 100 inputs a call, 4 clients; CPU of the API side: PostgreSQL "+
		"backends of the contacts role, the contacts service, the gateway, to the last answer. %s. The whole machine's busy CPU (/proc/stat) "+
		"from the first call to the last stored event, mean of the rounds: %.2f× its busy CPU during a raw COPY.",
		strings.Join(notes, "; "), machineRatio))
	report(b, fmt.Sprintf("Plain single create (POST /contacts, no custom fields, 4 clients) without and with 4 contact custom fields defined, %d alternating rounds of %d creates each", singleRounds, per),
		[]string{"round", "no fields creates/s", "p50 ms", "p95 ms", "4 fields defined creates/s", "p50 ms", "p95 ms", "after / before", "load average after"},
		singleRows)
	note(fmt.Sprintf("Contact custom fields defined before this benchmark: %d (the \"no fields\" side has those only). Each side waits until "+
		"the events of the one before are relayed and stored by webhooks.", defsBefore))
	b.ReportMetric(ratio, "x-raw-copy")
	b.ReportMetric(machineRatio, "machine-cpu-x-raw")
	b.ReportMetric(singleRatio, "single-after/before")
	b.ReportMetric(batchRows/apiMean.Seconds(), "rows/s")
}

// fanOut makes n calls from batchClients concurrent clients, call k being
// POST path with body under Idempotency-Key key ("" for none), as
// next(k) gives it, each answer judged by check. It returns every
// latency and the wall time. Bodies go out as built, outside the
// client's contract recording, so the client spends no CPU re-encoding
// them on a machine it shares with the stack.
func fanOut(b *testing.B, adm *Client, n int, next func(k int) (path string, body []byte, key string),
	check func(status int, body []byte) error) ([]time.Duration, time.Duration) {
	b.Helper()
	var mu sync.Mutex
	var k int
	var lat []time.Duration
	var failed error // under mu
	var wg sync.WaitGroup
	token, loggedIn := adm.Token, time.Now()
	t0 := time.Now()
	for range batchClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fail := func(err error) {
				mu.Lock()
				if failed == nil {
					failed = err
				}
				mu.Unlock()
			}
			for {
				mu.Lock()
				if k == n || failed != nil {
					mu.Unlock()
					return
				}
				if time.Since(loggedIn) > 5*time.Minute { // tokens expire within a long phase
					cl := stack.Client()
					cl.Record = nil
					t, err := cl.Login(AdminEmail, AdminPassword)
					if err != nil {
						failed = err
						mu.Unlock()
						return
					}
					token, loggedIn = t, time.Now()
				}
				path, body, key := next(k)
				tok := token
				k++
				mu.Unlock()
				req, err := http.NewRequestWithContext(b.Context(), http.MethodPost, adm.Base+path, bytes.NewReader(body))
				if err != nil {
					fail(err)
					return
				}
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+tok)
				if key != "" {
					req.Header.Set("Idempotency-Key", key)
				}
				s := time.Now()
				resp, err := adm.HTTP.Do(req)
				if err != nil {
					fail(err)
					return
				}
				var buf bytes.Buffer
				_, err = buf.ReadFrom(resp.Body)
				_ = resp.Body.Close()
				d := time.Since(s)
				if err == nil {
					err = check(resp.StatusCode, buf.Bytes())
				}
				if err != nil {
					fail(err)
					return
				}
				mu.Lock()
				lat = append(lat, d)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	took := time.Since(t0)
	if failed != nil {
		b.Fatal(failed)
	}
	return lat, took
}
