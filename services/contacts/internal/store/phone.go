package store

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/services/contacts/internal/contacts"
)

// phoneRegion is the region numbers without a country code are read in
// (SetPhoneRegion; contacts.DefaultPhoneRegion until set).
var phoneRegion atomic.Pointer[string]

// SetPhoneRegion sets the region (ISO 3166 alpha-2) a contact's number
// without a country code is read in, for every Store of the process.
func SetPhoneRegion(region string) { phoneRegion.Store(&region) }

func region() string {
	if r := phoneRegion.Load(); r != nil && *r != "" {
		return *r
	}
	return contacts.DefaultPhoneRegion
}

// phoneKey is the phone_e164 a write stores for a contact's phone and
// mobile: "" when neither is a possible number (computed, nothing to
// match on).
func phoneKey(phone, mobile *string) string {
	return contacts.PhoneE164(phone, mobile, region())
}

// PhoneBatch is how many contacts BackfillPhones normalises per statement.
const PhoneBatch = 1000

// BackfillPhones computes phone_e164 of the contacts still pending (rows
// written before migration 012 or by a write path that does not set it),
// batch rows per transaction, walking them by id through the
// contacts_phone_pending index; it returns how many it set. A row whose
// numbers changed meanwhile is left to its writer (or the next pass).
func (s *Store) BackfillPhones(ctx context.Context, batch int) (int, error) {
	if batch <= 0 {
		batch = PhoneBatch
	}
	total := 0
	var after int64
	for {
		type pending struct {
			ID            int64
			Phone, Mobile *string
		}
		rows, err := s.db.Query(ctx, `SELECT id, phone, mobile FROM contacts
			WHERE phone_e164 IS NULL AND (phone IS NOT NULL OR mobile IS NOT NULL) AND id > $1 ORDER BY id LIMIT $2`, after, batch)
		if err != nil {
			return total, err
		}
		ps, err := pgx.CollectRows(rows, pgx.RowToStructByPos[pending])
		if err != nil || len(ps) == 0 {
			return total, err
		}
		ids, phones, mobiles, keys := make([]int64, len(ps)), make([]*string, len(ps)), make([]*string, len(ps)), make([]string, len(ps))
		for i, p := range ps {
			ids[i], phones[i], mobiles[i], keys[i] = p.ID, p.Phone, p.Mobile, phoneKey(p.Phone, p.Mobile)
		}
		tag, err := s.db.Exec(ctx, `UPDATE contacts c SET phone_e164 = u.key
			FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[]) AS u (id, phone, mobile, key)
			WHERE c.id = u.id AND c.phone_e164 IS NULL
				AND c.phone IS NOT DISTINCT FROM u.phone AND c.mobile IS NOT DISTINCT FROM u.mobile`, ids, phones, mobiles, keys)
		if err != nil {
			return total, err
		}
		total += int(tag.RowsAffected())
		after = ids[len(ids)-1]
	}
}

// normalisePhones fills the pending phone_e164 of the contacts a bulk
// write (the import) left pending, in the background: detached from the
// request, under its own deadline, only logging a failure (the periodic
// pass would fill them anyway).
func (s *Store) normalisePhones(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanTimeout)
	go func() {
		defer cancel()
		start := time.Now()
		n, err := s.BackfillPhones(ctx, PhoneBatch)
		if err != nil {
			s.log.ErrorContext(ctx, "normalise imported phone numbers", "error", err.Error())
			return
		}
		s.log.InfoContext(ctx, "normalised imported phone numbers", "contacts", n, "took_ms", time.Since(start).Milliseconds())
	}()
}

// BackfillPhonesEvery runs BackfillPhones at once and then every
// interval until ctx ends, logging what it did.
func (s *Store) BackfillPhonesEvery(ctx context.Context, interval time.Duration) {
	for {
		start := time.Now()
		n, err := s.BackfillPhones(ctx, PhoneBatch)
		switch {
		case err != nil && ctx.Err() == nil:
			s.log.ErrorContext(ctx, "phone normalisation", "error", err.Error())
		case n > 0:
			s.log.InfoContext(ctx, "phone numbers normalised", "contacts", n, "took_ms", time.Since(start).Milliseconds())
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
	}
}
