package contacts

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/opencrm/crm/pkg/bulk"
	"github.com/opencrm/crm/pkg/contract/batchapi"
	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/idempotency"
)

// Result is one input's outcome in a batch answer.
type Result[R any] = batchapi.Result[R]

// Update is one input of a batch update: the record's id and its write body.
type Update[In any] struct {
	ID int64
	In In
}

// Writes are the writes of one batch, inside its transaction; each
// records its events as the single write does. CreateX writes several
// records at once (one statement per step for contacts, whatever their
// number) and answers them in order, or the failure with the index of the
// record it is about (-1 when none). UpdateX reports whether the record
// changed (an unchanged one is neither written nor published).
type Writes interface {
	CreateContacts(cs []Contact) ([]Contact, int, error)
	UpdateContact(id int64, apply func(*Contact) error) (Contact, bool, error)
	DeleteContact(id int64) error
	CreateCompanies(cs []Company) ([]Company, int, error)
	UpdateCompany(id int64, apply func(*Company) error) (Company, bool, error)
	DeleteCompany(id int64) error
}

// BatchStore runs a batch's writes in one transaction, at most once per
// Idempotency-Key (pkg/idempotency; request fingerprints the call, "" key
// runs it unprotected).
type BatchStore interface {
	ContactBatch(ctx context.Context, key string, request any, fn func(Writes) ([]Result[Contact], error)) (idempotency.Done[[]Result[Contact]], error)
	CompanyBatch(ctx context.Context, key string, request any, fn func(Writes) ([]Result[Company], error)) (idempotency.Done[[]Result[Company]], error)
	// Lookup finds the record of object holding value of the unique
	// custom field d.
	Lookup(ctx context.Context, object string, d customfield.Definition, value string) (int64, bool, error)
	// LookupMany is Lookup of many values at once: the id of the
	// record holding each value one holds.
	LookupMany(ctx context.Context, object string, d customfield.Definition, values []string) (map[string]int64, error)
	// ContactIDsByEmail and CompanyIDsByDomain find at once the ids of
	// the records holding each of the (lower-cased) own external ids,
	// ascending.
	ContactIDsByEmail(ctx context.Context, emails []string) (map[string][]int64, error)
	CompanyIDsByDomain(ctx context.Context, domains []string) (map[string][]int64, error)
}

// kind is what the batch rules need of one object (contacts, companies):
// its single write's checks and its storage.
type kind[R, In any] struct {
	object, resource string
	// own is the record's own external id field (email, domain); ownOf
	// reads it from an input (normalised, "" when absent), byOwn finds
	// the records holding it and idsByOwn the ids of those holding each
	// of many.
	own      string
	ownOf    func(In) string
	byOwn    func(ctx context.Context, value string) ([]R, error)
	idsByOwn func(ctx context.Context, values []string) (map[string][]int64, error)
	get      func(ctx context.Context, id int64) (R, error)
	idOf     func(R) int64
	// custom is an input's custom_fields; heldOf a record's.
	custom   func(In) map[string]json.RawMessage
	heldOf   func(R) map[string]any
	prepare  func(ctx context.Context, defs []customfield.Definition, cur R, in In) (R, error)
	apply    func(ctx context.Context, defs []customfield.Definition, in In) func(*R) error
	writable func(ctx context.Context, id int64) error
	insert   func(w Writes, rs []R) ([]R, int, error)
	patch    func(w Writes, id int64, apply func(*R) error) (R, bool, error)
	drop     func(w Writes, id int64) error
	run      func(ctx context.Context, key string, request any, fn func(Writes) ([]Result[R], error)) (idempotency.Done[[]Result[R]], error)
}

func (s *Service) contactKind() kind[Contact, ContactInput] {
	return kind[Contact, ContactInput]{
		object: propertyapi.Contacts, resource: "contact", own: "email",
		ownOf: func(in ContactInput) string {
			if !in.Email.Set || in.Email.Null {
				return ""
			}
			return strings.ToLower(strings.TrimSpace(in.Email.Value))
		},
		byOwn:    s.store.ContactsByEmail,
		idsByOwn: s.store.ContactIDsByEmail,
		get:      s.store.GetContact,
		idOf:     func(c Contact) int64 { return c.ID },
		custom:   func(in ContactInput) map[string]json.RawMessage { return in.CustomFields },
		heldOf:   func(c Contact) map[string]any { return c.CustomFields },
		prepare:  s.prepareContact,
		apply:    applyContact,
		writable: s.ContactWritable,
		insert:   Writes.CreateContacts,
		patch:    Writes.UpdateContact,
		drop:     Writes.DeleteContact,
		run:      s.store.ContactBatch,
	}
}

func (s *Service) companyKind() kind[Company, CompanyInput] {
	return kind[Company, CompanyInput]{
		object: propertyapi.Companies, resource: "company", own: "domain",
		ownOf: func(in CompanyInput) string {
			if !in.Domain.Set || in.Domain.Null {
				return ""
			}
			return strings.ToLower(strings.TrimSpace(in.Domain.Value))
		},
		byOwn:    s.store.CompaniesByDomain,
		idsByOwn: s.store.CompanyIDsByDomain,
		get:      s.store.GetCompany,
		idOf:     func(c Company) int64 { return c.ID },
		custom:   func(in CompanyInput) map[string]json.RawMessage { return in.CustomFields },
		heldOf:   func(c Company) map[string]any { return c.CustomFields },
		prepare:  s.prepareCompany,
		apply:    applyCompany,
		writable: s.companyWritable,
		insert:   Writes.CreateCompanies,
		patch:    Writes.UpdateCompany,
		drop:     Writes.DeleteCompany,
		run:      s.store.CompanyBatch,
	}
}

// companyWritable is ContactWritable for a company.
func (s *Service) companyWritable(ctx context.Context, id int64) error {
	o, err := s.store.CompanyOwner(ctx, id)
	if err != nil {
		return err
	}
	return s.store.CanWrite(ctx, o)
}

// atInput names err's fields after input i (inputs[i].<field>), keeping
// its kind: a duplicate unique value found while writing stays a 409.
func atInput(i int, err error) error {
	var f *fault.Error
	if !errors.As(err, &f) || f.Kind == fault.KindInternal || f.Kind == fault.KindUnavailable {
		return err
	}
	var e bulk.Errors
	if f.Kind == fault.KindInvalid {
		_ = e.Add(i, err)
		return e.Err()
	}
	named := *f
	named.Fields = nil
	for _, fe := range f.Fields {
		e.Field(i, fe.Field, fe.Message)
	}
	if err := e.Err(); err != nil {
		var ef *fault.Error
		errors.As(err, &ef)
		named.Fields = ef.Fields
	}
	return &named
}

// values is what each prepared record will hold, nil where its input
// was refused (bulk.Errors.UniqueValues compares the others).
func (k kind[R, In]) values(recs []R, ok []bool) []customfield.Values {
	out := make([]customfield.Values, len(recs))
	for i, r := range recs {
		if ok[i] {
			out[i] = k.heldOf(r)
		}
	}
	return out
}

func (k kind[R, In]) create(ctx context.Context, s *Service, key string, ins []In) (idempotency.Done[[]Result[R]], error) {
	var none idempotency.Done[[]Result[R]]
	var errs bulk.Errors
	if errs.Size("inputs", len(ins)); errs.Err() != nil {
		return none, errs.Err()
	}
	defs, err := s.store.Definitions(ctx, k.object)
	if err != nil {
		return none, err
	}
	recs, ok := make([]R, len(ins)), make([]bool, len(ins))
	var zero R
	for i, in := range ins {
		r, err := k.prepare(ctx, defs, zero, in)
		if err := errs.Add(i, err); err != nil {
			return none, err
		}
		recs[i], ok[i] = r, err == nil
	}
	errs.UniqueValues(defs, k.values(recs, ok))
	if err := errs.Err(); err != nil {
		return none, err
	}
	return k.run(ctx, key, bulk.Request{Op: "create", Inputs: ins}, func(w Writes) ([]Result[R], error) {
		out := make([]Result[R], len(recs))
		all := make([]int, len(recs))
		for i := range all {
			all[i] = i
		}
		if err := k.created(w, recs, all, out); err != nil {
			return nil, err
		}
		return out, nil
	})
}

// created writes the prepared records recs[i] of the inputs i in at with
// one store call and answers them in out; a failure is its input's.
func (k kind[R, In]) created(w Writes, recs []R, at []int, out []Result[R]) error {
	if len(at) == 0 {
		return nil
	}
	rs := make([]R, len(at))
	for j, i := range at {
		rs[j] = recs[i]
	}
	written, failed, err := k.insert(w, rs)
	switch {
	case err != nil && failed >= 0:
		return atInput(at[failed], err)
	case err != nil:
		return err
	}
	for j, i := range at {
		out[i] = bulk.Of(batchapi.Created, written[j])
	}
	return nil
}

// existing checks that the caller may change record id and prepares in
// over it; the problems are input i's.
func (k kind[R, In]) existing(ctx context.Context, errs *bulk.Errors, i int, defs []customfield.Definition, id int64, in In) (R, bool, error) {
	var zero R
	if err := k.writable(ctx, id); err != nil {
		return zero, false, errs.Add(i, err)
	}
	cur, err := k.get(ctx, id)
	if err != nil {
		return zero, false, errs.Add(i, err)
	}
	r, err := k.prepare(ctx, defs, cur, in)
	return r, err == nil, errs.Add(i, err)
}

func (k kind[R, In]) update(ctx context.Context, s *Service, key string, ups []Update[In]) (idempotency.Done[[]Result[R]], error) {
	var none idempotency.Done[[]Result[R]]
	var errs bulk.Errors
	if errs.Size("inputs", len(ups)); errs.Err() != nil {
		return none, errs.Err()
	}
	defs, err := s.store.Definitions(ctx, k.object)
	if err != nil {
		return none, err
	}
	recs, ok := make([]R, len(ups)), make([]bool, len(ups))
	ids := make([]string, len(ups))
	for i, u := range ups {
		if u.ID < 1 {
			errs.Field(i, "id", "must be a positive integer")
			continue
		}
		ids[i] = idKey(u.ID)
		if recs[i], ok[i], err = k.existing(ctx, &errs, i, defs, u.ID, u.In); err != nil {
			return none, err
		}
	}
	errs.Unique("id", ids)
	errs.UniqueValues(defs, k.values(recs, ok))
	if err := errs.Err(); err != nil {
		return none, err
	}
	inputs := make([]any, len(ups))
	for i, u := range ups {
		inputs[i] = map[string]any{"id": u.ID, "input": u.In}
	}
	return k.run(ctx, key, bulk.Request{Op: "update", Inputs: inputs}, func(w Writes) ([]Result[R], error) {
		out := make([]Result[R], len(ups))
		for i, u := range ups {
			r, changed, err := k.patch(w, u.ID, k.apply(ctx, defs, u.In))
			if err != nil {
				return nil, atInput(i, err)
			}
			out[i] = bulk.Of(status(changed), r)
		}
		return out, nil
	})
}

func idKey(id int64) string { return strconv.FormatInt(id, 10) }

func status(changed bool) string {
	if changed {
		return batchapi.Updated
	}
	return batchapi.Unchanged
}

// idProperty resolves a batch's id_property: the record's own external
// id (d nil), or a unique custom field.
func (k kind[R, In]) idProperty(defs []customfield.Definition, name string) (*customfield.Definition, error) {
	if name == k.own {
		return nil, nil
	}
	if d, ok := customfield.IsUnique(defs, name); ok {
		return &d, nil
	}
	return nil, fault.Invalidf("id_property", "must be %s or a unique custom field of %s", k.own, k.object)
}

// keyOf is input in's value of the id property (canonical), "" when it
// has none; a malformed custom value is left to the input's own check.
func (k kind[R, In]) keyOf(ctx context.Context, d *customfield.Definition, in In) string {
	if d == nil {
		return k.ownOf(in)
	}
	raw, ok := k.custom(in)[d.Name]
	if !ok {
		return ""
	}
	vals, err := customfield.Check(ctx, []customfield.Definition{{Name: d.Name, Type: d.Type, Options: d.Options}},
		nil, customfield.Input{d.Name: raw}, nil)
	if err != nil {
		return ""
	}
	return customfield.Cell(vals[d.Name])
}

// find returns the id of the record holding value of the id property,
// 0 when none; several records sharing an own external id is a problem
// of the input.
func (k kind[R, In]) find(ctx context.Context, s *Service, d *customfield.Definition, value string) (int64, error) {
	if d != nil {
		id, _, err := s.store.Lookup(ctx, k.object, *d, value)
		return id, err
	}
	recs, err := k.byOwn(ctx, value)
	switch {
	case err != nil:
		return 0, err
	case len(recs) > 1:
		return 0, fault.Invalidf(k.own, "matches %d %s: update them by id", len(recs), k.object)
	case len(recs) == 1:
		return k.idOf(recs[0]), nil
	}
	return 0, nil
}

// findAll is find for each of keys ("" skipped) with one store call: the
// ids (0 where no record holds the key) and, where several records share
// an own external id, the input's problem.
func (k kind[R, In]) findAll(ctx context.Context, s *Service, d *customfield.Definition, keys []string) ([]int64, []error, error) {
	ids, probs := make([]int64, len(keys)), make([]error, len(keys))
	values := make([]string, 0, len(keys))
	for _, key := range keys {
		if key != "" {
			values = append(values, key)
		}
	}
	if len(values) == 0 {
		return ids, probs, nil
	}
	if d != nil {
		found, err := s.store.LookupMany(ctx, k.object, *d, values)
		if err != nil {
			return nil, nil, err
		}
		for i, key := range keys {
			ids[i] = found[key]
		}
		return ids, probs, nil
	}
	held, err := k.idsByOwn(ctx, values)
	if err != nil {
		return nil, nil, err
	}
	for i, key := range keys {
		switch recs := held[key]; {
		case key == "":
		case len(recs) > 1:
			probs[i] = fault.Invalidf(k.own, "matches %d %s: update them by id", len(recs), k.object)
		case len(recs) == 1:
			ids[i] = recs[0]
		}
	}
	return ids, probs, nil
}

func (k kind[R, In]) upsert(ctx context.Context, s *Service, key, idProperty string, ins []In) (idempotency.Done[[]Result[R]], error) {
	var none idempotency.Done[[]Result[R]]
	var errs bulk.Errors
	if errs.Size("inputs", len(ins)); errs.Err() != nil {
		return none, errs.Err()
	}
	defs, err := s.store.Definitions(ctx, k.object)
	if err != nil {
		return none, err
	}
	d, err := k.idProperty(defs, idProperty)
	if err != nil {
		return none, err
	}
	field := k.own
	if d != nil {
		field = customfield.Field(d.Name)
	}
	keys := make([]string, len(ins))
	for i, in := range ins {
		if keys[i] = k.keyOf(ctx, d, in); keys[i] == "" {
			if _, given := k.custom(in)[idProperty]; d == nil || !given {
				errs.Field(i, field, "is required: it is the id_property that matches the record")
			}
		}
	}
	errs.Unique(field, keys)
	recs, ok := make([]R, len(ins)), make([]bool, len(ins))
	ids, probs, err := k.findAll(ctx, s, d, keys)
	if err != nil {
		return none, err
	}
	for i, in := range ins {
		var zero R
		if err := errs.Add(i, probs[i]); err != nil {
			return none, err
		}
		if ids[i] != 0 {
			if recs[i], ok[i], err = k.existing(ctx, &errs, i, defs, ids[i], in); err != nil {
				return none, err
			}
			continue
		}
		r, err := k.prepare(ctx, defs, zero, in)
		if err := errs.Add(i, err); err != nil {
			return none, err
		}
		recs[i], ok[i] = r, err == nil
	}
	errs.UniqueValues(defs, k.values(recs, ok))
	if err := errs.Err(); err != nil {
		return none, err
	}
	return k.run(ctx, key, bulk.Request{Op: "upsert", IDProperty: idProperty, Inputs: ins}, func(w Writes) ([]Result[R], error) {
		// Each run of creates between updates is one store call; the
		// writes keep the inputs' order, as one by one.
		out := make([]Result[R], len(ins))
		var creates []int
		for i, in := range ins {
			if ids[i] == 0 {
				creates = append(creates, i)
				continue
			}
			if err := k.created(w, recs, creates, out); err != nil {
				return nil, err
			}
			creates = creates[:0]
			r, changed, err := k.patch(w, ids[i], k.apply(ctx, defs, in))
			if err != nil {
				return nil, atInput(i, err)
			}
			out[i] = bulk.Of(status(changed), r)
		}
		if err := k.created(w, recs, creates, out); err != nil {
			return nil, err
		}
		return out, nil
	})
}

// read answers each id, or each value of an id property, in order: the
// record (status unchanged) or not_found.
func (k kind[R, In]) read(ctx context.Context, s *Service, in batchapi.Read) ([]Result[R], error) {
	var errs bulk.Errors
	switch {
	case len(in.IDs) > 0 && (in.IDProperty != "" || len(in.Values) > 0):
		return nil, fault.Invalid("ids", "give either ids, or id_property and values")
	case in.IDProperty == "" && len(in.Values) > 0:
		return nil, fault.Invalid("id_property", "is required with values")
	case in.IDProperty != "":
		errs.Size("values", len(in.Values))
	default:
		errs.Size("ids", len(in.IDs))
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	if in.IDProperty == "" {
		out := make([]Result[R], len(in.IDs))
		for i, id := range in.IDs {
			var err error
			if out[i], err = k.one(ctx, id); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	defs, err := s.store.Definitions(ctx, k.object)
	if err != nil {
		return nil, err
	}
	d, err := k.idProperty(defs, in.IDProperty)
	if err != nil {
		return nil, err
	}
	keys := make([]string, len(in.Values))
	for i, v := range in.Values {
		keys[i] = k.normal(d, v)
	}
	ids, probs, err := k.findAll(ctx, s, d, keys)
	if err != nil {
		return nil, err
	}
	out := make([]Result[R], len(in.Values))
	for i, v := range in.Values {
		id := ids[i]
		if probs[i] != nil { // several share the own external id: the earliest
			if id, err = k.first(ctx, v); err != nil {
				return nil, err
			}
		}
		if out[i], err = k.one(ctx, id); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// normal is a looked-up value as the id property stores it.
func (k kind[R, In]) normal(d *customfield.Definition, v string) string {
	if d == nil {
		return strings.ToLower(strings.TrimSpace(v))
	}
	return v
}

// first is the earliest record holding the own external id v (a read
// of one of several records sharing it), 0 when none.
func (k kind[R, In]) first(ctx context.Context, v string) (int64, error) {
	recs, err := k.byOwn(ctx, k.normal(nil, v))
	if err != nil || len(recs) == 0 {
		return 0, err
	}
	return k.idOf(recs[0]), nil
}

// one is record id's result: the record, or not_found.
func (k kind[R, In]) one(ctx context.Context, id int64) (Result[R], error) {
	if id < 1 {
		return Result[R]{Status: batchapi.NotFound}, nil
	}
	r, err := k.get(ctx, id)
	if errors.Is(err, fault.NotFound("")) {
		return Result[R]{Status: batchapi.NotFound}, nil
	}
	if err != nil {
		return Result[R]{}, err
	}
	return bulk.Of(batchapi.Unchanged, r), nil
}

func (k kind[R, In]) remove(ctx context.Context, s *Service, key string, ids []int64) (idempotency.Done[[]Result[R]], error) {
	var none idempotency.Done[[]Result[R]]
	var errs bulk.Errors
	if errs.Size("ids", len(ids)); errs.Err() != nil {
		return none, errs.Err()
	}
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = idKey(id)
		err := k.writable(ctx, id)
		if errors.Is(err, fault.NotFound("")) {
			continue
		}
		if err := errs.Add(i, err); err != nil {
			return none, err
		}
	}
	errs.Unique("id", keys)
	if err := errs.Err(); err != nil {
		return none, err
	}
	return k.run(ctx, key, bulk.Request{Op: "delete", Inputs: ids}, func(w Writes) ([]Result[R], error) {
		out := make([]Result[R], len(ids))
		for i, id := range ids {
			err := k.drop(w, id)
			switch {
			case errors.Is(err, fault.NotFound("")):
				out[i] = Result[R]{Status: batchapi.NotFound}
			case err != nil:
				return nil, atInput(i, err)
			default:
				out[i] = Result[R]{Status: batchapi.Deleted}
			}
		}
		return out, nil
	})
}

// byExternalID reads the record whose value of the id property name is
// value: the earliest of several sharing an own external id; not found
// when none holds it.
func (k kind[R, In]) byExternalID(ctx context.Context, s *Service, name, value string) (R, error) {
	var zero R
	defs, err := s.store.Definitions(ctx, k.object)
	if err != nil {
		return zero, err
	}
	d, err := k.idProperty(defs, name)
	if err != nil {
		return zero, err
	}
	var id int64
	if d == nil {
		id, err = k.first(ctx, value)
	} else {
		id, err = k.find(ctx, s, d, value)
	}
	if err != nil {
		return zero, err
	}
	if id == 0 {
		return zero, fault.NotFound(k.resource)
	}
	return k.get(ctx, id)
}

// CreateContacts creates up to batchapi.MaxInputs contacts in one
// transaction, each checked as CreateContact checks one, all before any
// is written.
func (s *Service) CreateContacts(ctx context.Context, key string, ins []ContactInput) (idempotency.Done[[]Result[Contact]], error) {
	return s.contactKind().create(ctx, s, key, ins)
}

// UpdateContacts is UpdateContact for a batch.
func (s *Service) UpdateContacts(ctx context.Context, key string, ups []Update[ContactInput]) (idempotency.Done[[]Result[Contact]], error) {
	return s.contactKind().update(ctx, s, key, ups)
}

// UpsertContacts updates the contact each input's value of idProperty
// (email, or a unique custom field) names, or creates one.
func (s *Service) UpsertContacts(ctx context.Context, key, idProperty string, ins []ContactInput) (idempotency.Done[[]Result[Contact]], error) {
	return s.contactKind().upsert(ctx, s, key, idProperty, ins)
}

// ReadContacts reads contacts by id or by an external id.
func (s *Service) ReadContacts(ctx context.Context, in batchapi.Read) ([]Result[Contact], error) {
	return s.contactKind().read(ctx, s, in)
}

// DeleteContacts deletes contacts; an unknown id is not_found.
func (s *Service) DeleteContacts(ctx context.Context, key string, ids []int64) (idempotency.Done[[]Result[Contact]], error) {
	return s.contactKind().remove(ctx, s, key, ids)
}

// ContactByExternalID reads the contact whose value of name (email or a
// unique custom field) is value.
func (s *Service) ContactByExternalID(ctx context.Context, name, value string) (Contact, error) {
	return s.contactKind().byExternalID(ctx, s, name, value)
}

// CreateCompanies is CreateContacts for companies.
func (s *Service) CreateCompanies(ctx context.Context, key string, ins []CompanyInput) (idempotency.Done[[]Result[Company]], error) {
	return s.companyKind().create(ctx, s, key, ins)
}

// UpdateCompanies is UpdateContacts for companies.
func (s *Service) UpdateCompanies(ctx context.Context, key string, ups []Update[CompanyInput]) (idempotency.Done[[]Result[Company]], error) {
	return s.companyKind().update(ctx, s, key, ups)
}

// UpsertCompanies is UpsertContacts for companies, whose own external id
// is domain.
func (s *Service) UpsertCompanies(ctx context.Context, key, idProperty string, ins []CompanyInput) (idempotency.Done[[]Result[Company]], error) {
	return s.companyKind().upsert(ctx, s, key, idProperty, ins)
}

// ReadCompanies is ReadContacts for companies.
func (s *Service) ReadCompanies(ctx context.Context, in batchapi.Read) ([]Result[Company], error) {
	return s.companyKind().read(ctx, s, in)
}

// DeleteCompanies is DeleteContacts for companies.
func (s *Service) DeleteCompanies(ctx context.Context, key string, ids []int64) (idempotency.Done[[]Result[Company]], error) {
	return s.companyKind().remove(ctx, s, key, ids)
}

// CompanyByExternalID is ContactByExternalID for companies.
func (s *Service) CompanyByExternalID(ctx context.Context, name, value string) (Company, error) {
	return s.companyKind().byExternalID(ctx, s, name, value)
}
