package store

import (
	"cmp"
	"context"
	"math"
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/services/contacts/internal/contacts"
)

// Duplicates are found by index lookups only (migration 012): contacts
// sharing lower(email) (contacts_status_email, through anyStatus) or phone_e164
// (contacts_phone_e164), or in one company (contacts_company) with
// similar names; companies sharing lower(domain) (companies_lower_domain)
// or with similar name_norm (companies_name_norm_trgm). The list of every
// pair walks the contacts by id and probes those indexes for partners of
// a higher id: a nested loop that stops at the page's end, never a cross
// join.

// NameSimilarity is the pg_trgm similarity from which two names count as
// one (within one company for contacts).
const NameSimilarity = 0.6

// reason weights of a pair's score: 1-Π(1-w).
var weights = map[string]float64{
	contactsapi.ReasonEmail: 0.9, contactsapi.ReasonPhone: 0.8, contactsapi.ReasonDomain: 0.9,
}

// score is a pair's likelihood from its reasons (sim: the names'
// similarity when name is one).
func score(reasons []string, sim float64) float64 {
	p := 1.0
	for _, r := range reasons {
		w := weights[r]
		if r == contactsapi.ReasonName {
			w = 0.6 * sim
		}
		p *= 1 - w
	}
	return math.Round((1-p)*100) / 100
}

// reasonOrder sorts reasons as the API lists them.
var reasonOrder = []string{contactsapi.ReasonEmail, contactsapi.ReasonPhone, contactsapi.ReasonDomain, contactsapi.ReasonName}

// candidate is a pair as the queries return it.
type candidate struct {
	A, B    int64
	Reasons []string
	Sim     *float64
}

func scanCandidate(row pgx.CollectableRow) (candidate, error) {
	var c candidate
	err := row.Scan(&c.A, &c.B, &c.Reasons, &c.Sim)
	slices.SortFunc(c.Reasons, func(x, y string) int { return cmp.Compare(slices.Index(reasonOrder, x), slices.Index(reasonOrder, y)) })
	return c, err
}

// notDismissed is the condition leaving out dismissed pairs of object
// (the pair's ids in x and y).
func notDismissed(object, x, y string) string {
	return `NOT EXISTS (SELECT 1 FROM duplicate_dismissals d WHERE d.object = '` + object + `'
		AND d.a = least(` + x + `, ` + y + `) AND d.b = greatest(` + x + `, ` + y + `))`
}

// contactCandidatesSQL lists contact $1's candidates: (me, other,
// reasons, name similarity).
var contactCandidatesSQL = `WITH me AS MATERIALIZED (
		SELECT id, lower(email) AS email, phone_e164, company_id, sort_name FROM contacts WHERE id = $1),
	c AS (
		SELECT o.id, 'email' AS reason, NULL::real AS sim FROM me JOIN contacts o
			ON lower(o.email) = me.email AND o.` + anyStatus + ` AND o.id <> me.id
		UNION ALL
		SELECT o.id, 'phone', NULL FROM me JOIN contacts o ON o.phone_e164 = me.phone_e164 AND o.phone_e164 <> '' AND o.id <> me.id
		UNION ALL
		SELECT o.id, 'name', similarity(o.sort_name, me.sort_name) FROM me JOIN contacts o
			ON o.company_id = me.company_id AND o.id <> me.id
			WHERE similarity(o.sort_name, me.sort_name) >= ` + ftoa(NameSimilarity) + `)
	SELECT me.id, c.id, array_agg(DISTINCT c.reason), max(c.sim)::float8
	FROM me, c WHERE ` + notDismissed("contact", "me.id", "c.id") + `
	GROUP BY me.id, c.id`

// companyCandidatesSQL is contactCandidatesSQL for companies; run with
// pg_trgm.similarity_threshold at NameSimilarity, so % probes the
// trigram index for names that similar.
var companyCandidatesSQL = `WITH me AS MATERIALIZED (
		SELECT id, lower(domain) AS domain, name_norm FROM companies WHERE id = $1),
	c AS (
		SELECT o.id, 'domain' AS reason, NULL::real AS sim FROM me JOIN companies o
			ON lower(o.domain) = me.domain AND o.domain IS NOT NULL AND o.id <> me.id
		UNION ALL
		SELECT o.id, 'name', similarity(o.name_norm, me.name_norm) FROM me JOIN companies o
			ON o.name_norm % me.name_norm AND o.id <> me.id)
	SELECT me.id, c.id, array_agg(DISTINCT c.reason), max(c.sim)::float8
	FROM me, c WHERE ` + notDismissed("company", "me.id", "c.id") + `
	GROUP BY me.id, c.id`

func ftoa(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// notFoundOr is err, or resource's not-found when err is nil.
func notFoundOr(err error, resource string) error {
	if err != nil {
		return err
	}
	return fault.NotFound(resource)
}

// ContactDuplicatesPairsSQL is the query of a page of contact pairs
// after ($1, $2), at most $3: two ordered walks (e-mail, phone), each a
// nested loop over contacts by id probing its index for partners of a
// higher id, merged by pair; a pair whose two contacts also share a
// company and a similar name has the name reason too. Pairs related by
// the name alone are a record's candidates (GET /contacts/{id}/duplicates)
// but not listed here: no index orders them, and walking every company's
// members cost 40 times the two index walks. Exported for the benchmark,
// which times PostgreSQL's own run of it.
var ContactDuplicatesPairsSQL = `WITH p AS (
		(SELECT a.id AS a, b.id AS b, 'email' AS reason
		FROM contacts a JOIN contacts b ON lower(b.email) = lower(a.email) AND b.` + anyStatus + ` AND b.id > a.id
		WHERE a.email IS NOT NULL AND a.id >= $1 AND (a.id > $1 OR b.id > $2) AND ` + notDismissed("contact", "a.id", "b.id") + `
		ORDER BY a.id, b.id LIMIT $3)
		UNION ALL
		(SELECT a.id, b.id, 'phone'
		FROM contacts a JOIN contacts b ON b.phone_e164 = a.phone_e164 AND b.phone_e164 <> '' AND b.id > a.id
		WHERE a.phone_e164 <> '' AND a.id >= $1 AND (a.id > $1 OR b.id > $2) AND ` + notDismissed("contact", "a.id", "b.id") + `
		ORDER BY a.id, b.id LIMIT $3)),
	page AS (SELECT a, b, array_agg(DISTINCT reason) AS reasons FROM p GROUP BY a, b ORDER BY a, b LIMIT $3)
	SELECT page.a, page.b, CASE WHEN n.sim >= ` + ftoa(NameSimilarity) + ` THEN page.reasons || 'name'::text ELSE page.reasons END,
		CASE WHEN n.sim >= ` + ftoa(NameSimilarity) + ` THEN n.sim::float8 END
	FROM page JOIN contacts x ON x.id = page.a JOIN contacts y ON y.id = page.b,
		LATERAL (SELECT CASE WHEN x.company_id = y.company_id THEN similarity(x.sort_name, y.sort_name) END AS sim) n
	ORDER BY page.a, page.b`

// companyPairsSQL is ContactDuplicatesPairsSQL for companies (domain,
// similar names), run with pg_trgm.similarity_threshold at
// NameSimilarity.
var companyPairsSQL = `WITH p AS (
		(SELECT a.id AS a, b.id AS b, 'domain' AS reason, NULL::real AS sim
		FROM companies a JOIN companies b ON lower(b.domain) = lower(a.domain) AND b.domain IS NOT NULL AND b.id > a.id
		WHERE a.domain IS NOT NULL AND a.id >= $1 AND (a.id > $1 OR b.id > $2) AND ` + notDismissed("company", "a.id", "b.id") + `
		ORDER BY a.id, b.id LIMIT $3)
		UNION ALL
		(SELECT a.id, b.id, 'name', similarity(a.name_norm, b.name_norm)
		FROM companies a JOIN companies b ON b.name_norm % a.name_norm AND b.id > a.id
		WHERE a.id >= $1 AND (a.id > $1 OR b.id > $2) AND ` + notDismissed("company", "a.id", "b.id") + `
		ORDER BY a.id, b.id LIMIT $3))
	SELECT a, b, array_agg(DISTINCT reason), max(sim)::float8 FROM p GROUP BY a, b ORDER BY a, b LIMIT $3`

// withThreshold runs fn in a read transaction whose % operator means a
// similarity of at least NameSimilarity.
func (s *Store) withThreshold(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return s.db.InTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL pg_trgm.similarity_threshold = `+ftoa(NameSimilarity)); err != nil {
			return err
		}
		return fn(tx)
	})
}

// ContactDuplicates lists contact id's candidates, best first.
func (s *Store) ContactDuplicates(ctx context.Context, id int64, limit int) ([]contacts.DuplicatePair[contacts.Contact], error) {
	if ok, err := s.ContactExists(ctx, id); err != nil || !ok {
		return nil, notFoundOr(err, "contact")
	}
	rows, err := s.db.Query(ctx, contactCandidatesSQL, id)
	if err != nil {
		return nil, err
	}
	cs, err := pgx.CollectRows(rows, scanCandidate)
	if err != nil {
		return nil, err
	}
	return pairs(ctx, best(cs, limit), s.ContactsByID, func(c contacts.Contact) int64 { return c.ID })
}

// CompanyDuplicates lists company id's candidates, best first.
func (s *Store) CompanyDuplicates(ctx context.Context, id int64, limit int) ([]contacts.DuplicatePair[contacts.Company], error) {
	if ok, err := s.CompanyExists(ctx, id); err != nil || !ok {
		return nil, notFoundOr(err, "company")
	}
	var cs []candidate
	if err := s.withThreshold(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, companyCandidatesSQL, id)
		if err != nil {
			return err
		}
		cs, err = pgx.CollectRows(rows, scanCandidate)
		return err
	}); err != nil {
		return nil, err
	}
	return pairs(ctx, best(cs, limit), s.companiesByID, func(c contacts.Company) int64 { return c.ID })
}

// ListContactDuplicates is a page of contact pairs after after.
func (s *Store) ListContactDuplicates(ctx context.Context, after [2]int64, n int) ([]contacts.DuplicatePair[contacts.Contact], error) {
	rows, err := s.db.Query(ctx, ContactDuplicatesPairsSQL, after[0], after[1], n)
	if err != nil {
		return nil, err
	}
	cs, err := pgx.CollectRows(rows, scanCandidate)
	if err != nil {
		return nil, err
	}
	return pairs(ctx, cs, s.ContactsByID, func(c contacts.Contact) int64 { return c.ID })
}

// ListCompanyDuplicates is a page of company pairs after after.
func (s *Store) ListCompanyDuplicates(ctx context.Context, after [2]int64, n int) ([]contacts.DuplicatePair[contacts.Company], error) {
	var cs []candidate
	if err := s.withThreshold(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, companyPairsSQL, after[0], after[1], n)
		if err != nil {
			return err
		}
		cs, err = pgx.CollectRows(rows, scanCandidate)
		return err
	}); err != nil {
		return nil, err
	}
	return pairs(ctx, cs, s.companiesByID, func(c contacts.Company) int64 { return c.ID })
}

// companiesByID reads the companies among ids, as the API shows them.
func (s *Store) companiesByID(ctx context.Context, ids []int64) ([]contacts.Company, error) {
	rows, err := s.db.Query(ctx, `SELECT `+companyCols+` FROM companies WHERE id = ANY($1) ORDER BY id`, ids)
	if err != nil {
		return nil, err
	}
	list, err := collect(rows, scanCompany)
	if err != nil {
		return nil, err
	}
	for i := range list {
		if err := s.renderCompanies(ctx, &list[i]); err != nil {
			return nil, err
		}
	}
	return list, nil
}

// best orders one record's candidates by score (then id) and keeps limit.
func best(cs []candidate, limit int) []candidate {
	slices.SortStableFunc(cs, func(x, y candidate) int {
		if c := cmp.Compare(score(y.Reasons, sim(y)), score(x.Reasons, sim(x))); c != 0 {
			return c
		}
		return cmp.Compare(x.B, y.B)
	})
	return cs[:min(len(cs), limit)]
}

func sim(c candidate) float64 {
	if c.Sim == nil {
		return 0
	}
	return *c.Sim
}

// pairs reads the records of cs (with read) and builds the answers; a
// pair whose record went meanwhile is left out.
func pairs[T any](ctx context.Context, cs []candidate, read func(context.Context, []int64) ([]T, error), id func(T) int64) ([]contacts.DuplicatePair[T], error) {
	out := []contacts.DuplicatePair[T]{}
	if len(cs) == 0 {
		return out, nil
	}
	var ids []int64
	for _, c := range cs {
		ids = append(ids, c.A, c.B)
	}
	slices.Sort(ids)
	recs, err := read(ctx, slices.Compact(ids))
	if err != nil {
		return nil, err
	}
	by := make(map[int64]T, len(recs))
	for _, r := range recs {
		by[id(r)] = r
	}
	for _, c := range cs {
		a, okA := by[c.A]
		b, okB := by[c.B]
		if !okA || !okB {
			continue
		}
		out = append(out, contacts.DuplicatePair[T]{IDs: [2]int64{c.A, c.B}, Records: [2]T{a, b},
			Score: score(c.Reasons, sim(c)), Reasons: c.Reasons})
	}
	return out, nil
}
