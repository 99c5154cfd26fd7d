package contacts

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/contract/historyapi"
	"github.com/opencrm/crm/pkg/contract/mergeapi"
	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/pkg/directory"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/history"
	"github.com/opencrm/crm/pkg/validate"
)

// Objects a merge joins (mergeapi.Contact, mergeapi.Company).
const (
	ObjectContact = mergeapi.Contact
	ObjectCompany = mergeapi.Company
)

// Merge events on crm:events:contacts.
const (
	ContactMerged = contactsapi.EventContactMerged
	CompanyMerged = contactsapi.EventCompanyMerged
)

// Merge is a merge's state as GET /merges/{id} answers it.
type Merge = contactsapi.Merge

// MergeStep is one mover's part of a merge.
type MergeStep = contactsapi.MergeStep

// MergeRequest is a checked merge: Survivor keeps, Merged (ascending, at
// most mergeapi.MaxMerged) go, Fields chooses a source record per field.
type MergeRequest struct {
	Object   string
	Survivor int64
	Merged   []int64
	Fields   map[string]int64
	// Given is Merged in the request's order (field errors name a place
	// in it).
	Given []int64
}

// Mover is one context's internal move API (mergeapi.Client).
type Mover interface {
	Move(ctx context.Context, id int64, m mergeapi.Move) (mergeapi.Moved, error)
}

// Combine builds the survivor of a merge from the survivor as stored
// and the merged records (newest first), under the request's field
// choices and the custom-field definitions held.
type Combine[T any] func(survivor T, merged []T, defs []customfield.Definition) (T, error)

// MergeStore is the storage of duplicates and merges.
type MergeStore interface {
	// ContactDuplicates and CompanyDuplicates are one record's candidates,
	// best first (at most limit); not found when it does not exist.
	ContactDuplicates(ctx context.Context, id int64, limit int) ([]DuplicatePair[Contact], error)
	CompanyDuplicates(ctx context.Context, id int64, limit int) ([]DuplicatePair[Company], error)
	// ListContactDuplicates and ListCompanyDuplicates are the candidate
	// pairs after the pair after (zero: from the start), ascending, at
	// most n.
	ListContactDuplicates(ctx context.Context, after [2]int64, n int) ([]DuplicatePair[Contact], error)
	ListCompanyDuplicates(ctx context.Context, after [2]int64, n int) ([]DuplicatePair[Company], error)
	// Dismiss hides the pair a, b of object (in either order); a field
	// error names ids[0] or ids[1] when it does not exist.
	Dismiss(ctx context.Context, object string, a, b int64) error
	// MergedInto is the record id of object was merged into.
	MergedInto(ctx context.Context, object string, id int64) (into int64, ok bool, err error)
	// FindMerge is the merge of object with survivor and merged.
	FindMerge(ctx context.Context, object string, survivor int64, merged []int64) (Merge, bool, error)
	// MergeContacts and MergeCompanies run the local step of r in one
	// transaction and store the merge, running, with a pending step per
	// mover (replayed true when the same merge committed meanwhile).
	MergeContacts(ctx context.Context, r MergeRequest, movers []string, combine Combine[Contact]) (m Merge, replayed bool, err error)
	MergeCompanies(ctx context.Context, r MergeRequest, movers []string, combine Combine[Company]) (m Merge, replayed bool, err error)
	GetMerge(ctx context.Context, id int64) (Merge, error)
	// Advance runs the pending steps of merge id (0: the running merge
	// due first) under its row lock, skipping a merge another holds:
	// step moves one context's pointers; a failed step is retried after
	// retry(attempts). ok is false when no merge was advanced.
	// step gets the addresses the merge stored for mail (Move.Emails).
	Advance(ctx context.Context, id int64, step func(ctx context.Context, m Merge, emails []string, mover string) (mergeapi.Moved, error),
		retry func(attempts int) time.Duration) (m Merge, ok bool, err error)
}

// MergeConfig tunes the merge saga.
type MergeConfig struct {
	// Movers are the contexts' move APIs, by name (mergeapi.Movers).
	Movers map[string]Mover
	// RetryBase and RetryMax bound the runner's backoff of a failed step
	// (doubling from RetryBase); Interval is how often it looks for due
	// merges.
	RetryBase, RetryMax, Interval time.Duration
	Log                           *slog.Logger
}

// Merger finds duplicates and merges contacts and companies.
type Merger struct {
	store  MergeStore
	svc    *Service
	cfg    MergeConfig
	movers []string
}

// NewMerger wires the merge saga to its store, the contacts service
// (definitions, write checks) and the movers.
func NewMerger(store MergeStore, svc *Service, cfg MergeConfig) (*Merger, error) {
	if store == nil || svc == nil {
		return nil, errors.New("contacts: merger needs a store and the service")
	}
	if cfg.RetryBase <= 0 {
		cfg.RetryBase = time.Second
	}
	if cfg.RetryMax < cfg.RetryBase {
		cfg.RetryMax = max(time.Minute, cfg.RetryBase)
	}
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	m := &Merger{store: store, svc: svc, cfg: cfg}
	for _, name := range mergeapi.Movers {
		if cfg.Movers[name] != nil {
			m.movers = append(m.movers, name)
		}
	}
	return m, nil
}

// MergedFault is the 404 of a merged record's id: code merged, naming
// the record it was merged into.
func MergedFault(object string, into int64) error {
	return fault.New(fault.KindNotFound, contactsapi.CodeMerged, object+" was merged into "+strconv.FormatInt(into, 10)).
		With(contactsapi.MergedInto, into)
}

// Merged turns err, a not-found of object id, into MergedFault when id
// was merged; any other error (or nil) is returned as is.
func (m *Merger) Merged(ctx context.Context, object string, id int64, err error) error {
	if err == nil || !errors.Is(err, fault.NotFound("")) {
		return err
	}
	into, ok, lerr := m.store.MergedInto(ctx, object, id)
	if lerr != nil {
		return lerr
	}
	if ok {
		return MergedFault(object, into)
	}
	return err
}

// ---- duplicates ----

// DuplicatePair is a candidate pair of records.
type DuplicatePair[T any] = contactsapi.DuplicatePair[T]

// MaxCandidates bounds GET /contacts/{id}/duplicates.
const MaxCandidates = 50

// ContactDuplicates lists contact id's candidates, best first.
func (m *Merger) ContactDuplicates(ctx context.Context, id int64) ([]DuplicatePair[Contact], error) {
	list, err := m.store.ContactDuplicates(ctx, id, MaxCandidates)
	return list, m.Merged(ctx, ObjectContact, id, err)
}

// CompanyDuplicates lists company id's candidates, best first.
func (m *Merger) CompanyDuplicates(ctx context.Context, id int64) ([]DuplicatePair[Company], error) {
	list, err := m.store.CompanyDuplicates(ctx, id, MaxCandidates)
	return list, m.Merged(ctx, ObjectCompany, id, err)
}

// ParseAfter reads a page cursor "a,b" (a < b); "" is the first page.
func ParseAfter(s string) ([2]int64, error) {
	if s == "" {
		return [2]int64{}, nil
	}
	x, y, ok := strings.Cut(s, ",")
	a, errA := strconv.ParseInt(x, 10, 64)
	b, errB := strconv.ParseInt(y, 10, 64)
	if !ok || errA != nil || errB != nil || a < 1 || b <= a {
		return [2]int64{}, fault.Invalid("after", "must be the next cursor of a previous page (two ids \"a,b\", a < b)")
	}
	return [2]int64{a, b}, nil
}

// Cursor is the after cursor of the pair following p.
func Cursor(p [2]int64) string {
	return strconv.FormatInt(p[0], 10) + "," + strconv.FormatInt(p[1], 10)
}

// ListContactDuplicates is one page of contact candidate pairs and the
// cursor of the next (nil on the last).
func (m *Merger) ListContactDuplicates(ctx context.Context, after [2]int64, n int) ([]DuplicatePair[Contact], *string, error) {
	return page(m.store.ListContactDuplicates(ctx, after, n+1))(n)
}

// ListCompanyDuplicates is ListContactDuplicates for companies.
func (m *Merger) ListCompanyDuplicates(ctx context.Context, after [2]int64, n int) ([]DuplicatePair[Company], *string, error) {
	return page(m.store.ListCompanyDuplicates(ctx, after, n+1))(n)
}

// page cuts a list read one past n to n, with the next page's cursor.
func page[T any](list []DuplicatePair[T], err error) func(n int) ([]DuplicatePair[T], *string, error) {
	return func(n int) ([]DuplicatePair[T], *string, error) {
		if err != nil || len(list) <= n {
			return list, nil, err
		}
		list = list[:n]
		next := Cursor(list[n-1].IDs)
		return list, &next, nil
	}
}

// Dismiss hides a pair of object (two distinct ids, both existing).
func (m *Merger) Dismiss(ctx context.Context, object string, ids []int64) ([2]int64, error) {
	if len(ids) != 2 {
		return [2]int64{}, fault.Invalid("ids", "must hold two ids")
	}
	var v validate.Errors
	for i, id := range ids {
		if id < 1 {
			v.Add(fmt.Sprintf("ids[%d]", i), "must be a positive integer")
		}
	}
	if !v.Has("ids[0]") && !v.Has("ids[1]") && ids[0] == ids[1] {
		v.Add("ids[1]", "must differ from ids[0]")
	}
	if err := v.Err(); err != nil {
		return [2]int64{}, err
	}
	pair := [2]int64{min(ids[0], ids[1]), max(ids[0], ids[1])}
	return pair, m.store.Dismiss(ctx, object, ids[0], ids[1])
}

// ---- merge ----

// contactFields are the contact fields a merge chooses (tags are united).
var contactFields = []string{"first_name", "last_name", "email", "phone", "mobile", "job_title", "company_id",
	"address_street", "address_city", "address_state", "address_zip", "address_country", "notes", "status",
	"source", "assigned_to"}

// companyFields are the company fields a merge chooses.
var companyFields = []string{"name", "domain", "website", "phone", "industry",
	"address_street", "address_city", "address_state", "address_zip", "address_country"}

// customPrefix names a custom field in MergeInput.Fields.
const customPrefix = "custom_fields."

// checkRequest checks the shape of a merge of object into survivor: the
// ids and the field names and sources (existence is the store's).
func (m *Merger) checkRequest(ctx context.Context, object string, survivor int64, in contactsapi.MergeInput) (MergeRequest, error) {
	var v validate.Errors
	switch n := len(in.MergeIDs); {
	case n == 0:
		v.Add("merge_ids", "is required")
	case n > mergeapi.MaxMerged:
		v.Add("merge_ids", "must hold at most %d ids", mergeapi.MaxMerged)
	}
	seen := map[int64]bool{}
	if !v.Has("merge_ids") {
		for i, id := range in.MergeIDs {
			f := fmt.Sprintf("merge_ids[%d]", i)
			switch {
			case id < 1:
				v.Add(f, "must be a positive integer")
			case id == survivor:
				v.Add(f, "is the record merged into")
			case seen[id]:
				v.Add(f, "is listed twice")
			}
			seen[id] = true
		}
	}
	names := contactFields
	defsObject := propertyapi.Contacts
	if object == ObjectCompany {
		names, defsObject = companyFields, propertyapi.Companies
	}
	defs, err := m.svc.Definitions(ctx, defsObject)
	if err != nil {
		return MergeRequest{}, err
	}
	for _, name := range slices.Sorted(maps.Keys(in.Fields)) {
		f := "fields." + name
		src := in.Fields[name]
		custom, isCustom := strings.CutPrefix(name, customPrefix)
		switch {
		case name == "tags" && object == ObjectContact:
			v.Add(f, "tags are united, not chosen")
		case isCustom && !slices.ContainsFunc(defs, func(d customfield.Definition) bool { return d.Name == custom }):
			v.Add(f, "is not a custom field of %s", defsObject)
		case isCustom && slices.ContainsFunc(defs, func(d customfield.Definition) bool {
			return d.Name == custom && d.Type == customfield.MultiEnum
		}):
			v.Add(f, "multi-enum fields are united, not chosen")
		case !isCustom && !slices.Contains(names, name):
			v.Add(f, "is not a field a merge chooses")
		case src != survivor && !seen[src]:
			v.Add(f, "must be the id of a record of the merge")
		}
	}
	if err := v.Err(); err != nil {
		return MergeRequest{}, err
	}
	merged := slices.Sorted(slices.Values(in.MergeIDs))
	fields := in.Fields
	if fields == nil {
		fields = map[string]int64{}
	}
	return MergeRequest{Object: object, Survivor: survivor, Merged: merged, Fields: fields, Given: in.MergeIDs}, nil
}

// MergeContacts merges the contacts in.MergeIDs into survivor. The caller
// may change the survivor (the route's guard); it must be able to change
// every merged contact too. A repeat of a merge answers it (replayed).
func (m *Merger) MergeContacts(ctx context.Context, survivor int64, in contactsapi.MergeInput) (Merge, bool, error) {
	r, err := m.checkRequest(ctx, ObjectContact, survivor, in)
	if err != nil {
		return Merge{}, false, err
	}
	if mg, ok, err := m.repeated(ctx, r); ok || err != nil {
		return mg, true, err
	}
	if err := m.writable(ctx, r, m.svc.ContactOwner); err != nil {
		return Merge{}, false, err
	}
	ctx = history.WithVia(ctx, historyapi.ViaMerge)
	mg, replayed, err := m.store.MergeContacts(ctx, r, m.movers, func(s Contact, merged []Contact, defs []customfield.Definition) (Contact, error) {
		return CombineContacts(s, merged, r.Fields, defs), nil
	})
	if err != nil {
		return Merge{}, false, m.Merged(ctx, ObjectContact, survivor, err)
	}
	return m.advance(ctx, mg), replayed, nil
}

// MergeCompanies merges the companies in.MergeIDs into survivor: their
// contacts, deals and leads follow.
func (m *Merger) MergeCompanies(ctx context.Context, survivor int64, in contactsapi.MergeInput) (Merge, bool, error) {
	r, err := m.checkRequest(ctx, ObjectCompany, survivor, in)
	if err != nil {
		return Merge{}, false, err
	}
	if mg, ok, err := m.repeated(ctx, r); ok || err != nil {
		return mg, true, err
	}
	if err := m.writable(ctx, r, m.svc.CompanyOwner); err != nil {
		return Merge{}, false, err
	}
	ctx = history.WithVia(ctx, historyapi.ViaMerge)
	mg, replayed, err := m.store.MergeCompanies(ctx, r, m.movers, func(s Company, merged []Company, defs []customfield.Definition) (Company, error) {
		return CombineCompanies(s, merged, r.Fields, defs), nil
	})
	if err != nil {
		return Merge{}, false, m.Merged(ctx, ObjectCompany, survivor, err)
	}
	return m.advance(ctx, mg), replayed, nil
}

// repeated is the earlier merge r repeats: ok with the same field
// choices, a merge_conflict with others.
func (m *Merger) repeated(ctx context.Context, r MergeRequest) (Merge, bool, error) {
	mg, ok, err := m.store.FindMerge(ctx, r.Object, r.Survivor, r.Merged)
	if err != nil || !ok {
		return Merge{}, false, err
	}
	if !maps.Equal(mg.Fields, r.Fields) {
		return Merge{}, false, fault.Conflict(contactsapi.CodeMergeConflict,
			"merge "+strconv.FormatInt(mg.ID, 10)+" merged these records with other field choices").With("merge_id", mg.ID)
	}
	return mg, true, nil
}

// writable checks the caller may change every merged record (an unknown
// one is left to the store's check, which names its position).
func (m *Merger) writable(ctx context.Context, r MergeRequest, owner func(context.Context, int64) (directory.Owner, error)) error {
	for _, id := range r.Merged {
		o, err := owner(ctx, id)
		if errors.Is(err, fault.NotFound("")) {
			continue
		}
		if err != nil {
			return err
		}
		if err := m.svc.CanWrite(ctx, o); err != nil {
			return err
		}
	}
	return nil
}

// GetMerge reads a merge.
func (m *Merger) GetMerge(ctx context.Context, id int64) (Merge, error) {
	return m.store.GetMerge(ctx, id)
}

// advance runs mg's pending steps now (the request's own attempt); a
// failure leaves it running for the runner, and mg as it then stands is
// the answer.
func (m *Merger) advance(ctx context.Context, mg Merge) Merge {
	if mg.Status != contactsapi.MergeRunning {
		return mg
	}
	got, ok, err := m.store.Advance(ctx, mg.ID, m.step, m.retry)
	if err != nil {
		m.cfg.Log.ErrorContext(ctx, "merge step failed", "merge", mg.ID, "error", err.Error())
	}
	if err != nil || !ok {
		if cur, err := m.store.GetMerge(ctx, mg.ID); err == nil {
			return cur
		}
		return mg
	}
	return got
}

// step asks one mover to move merge mg's pointers, with the addresses the
// merge's contacts had that the survivor no longer holds (emails).
func (m *Merger) step(ctx context.Context, mg Merge, emails []string, mover string) (mergeapi.Moved, error) {
	mv := m.cfg.Movers[mover]
	if mv == nil {
		return mergeapi.Moved{}, nil
	}
	return mv.Move(history.WithVia(ctx, historyapi.ViaMerge), mg.ID, mergeapi.Move{Object: mg.Object, Into: mg.Survivor,
		Merged: mg.Merged, Emails: emails})
}

// retry is the backoff after a merge's attempts-th failure.
func (m *Merger) retry(attempts int) time.Duration {
	d := m.cfg.RetryBase
	for i := 1; i < attempts && d < m.cfg.RetryMax; i++ {
		d *= 2
	}
	return min(d, m.cfg.RetryMax)
}

// Run completes running merges until ctx ends: every Interval it
// advances each due merge (several replicas share them: a merge one
// holds is skipped by the others).
func (m *Merger) Run(ctx context.Context) {
	t := time.NewTicker(m.cfg.Interval)
	defer t.Stop()
	for {
		for ctx.Err() == nil {
			mg, ok, err := m.store.Advance(ctx, 0, m.step, m.retry)
			if err != nil {
				m.cfg.Log.ErrorContext(ctx, "merge runner", "error", err.Error())
				break
			}
			if !ok {
				break
			}
			if mg.Status == contactsapi.MergeCompleted {
				m.cfg.Log.InfoContext(ctx, "merge completed", "merge", mg.ID)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// ---- combining records ----

// newestFirst orders merged records newest first (updated_at, then id).
func newestFirst[T any](list []T, at func(T) (time.Time, int64)) {
	slices.SortStableFunc(list, func(a, b T) int {
		ta, ia := at(a)
		tb, ib := at(b)
		if c := tb.Compare(ta); c != 0 {
			return c
		}
		return cmp.Compare(ib, ia)
	})
}

// pick sets *dst on survivor to the value the merge keeps: the chosen
// source's when fields names one, else the survivor's where set, else
// the newest merged record's non-empty one.
func pick[T, V any](name string, fields map[string]int64, survivor *T, merged []T, id func(*T) int64, get func(*T) *V, empty func(V) bool) {
	dst := get(survivor)
	if src, ok := fields[name]; ok {
		for i := range merged {
			if id(&merged[i]) == src {
				*dst = *get(&merged[i])
			}
		}
		return
	}
	if !empty(*dst) {
		return
	}
	for i := range merged {
		if v := *get(&merged[i]); !empty(v) {
			*dst = v
			return
		}
	}
}

func nilStr(p *string) bool      { return p == nil || *p == "" }
func nilID(p *int64) bool        { return p == nil }
func noText(s string) bool       { return s == "" }
func contactID(c *Contact) int64 { return c.ID }
func companyID(c *Company) int64 { return c.ID }

// CombineContacts is the survivor of a merge of merged into s under the
// field choices fields (the held custom fields of every record in
// CustomFields): see MergeInput.Fields.
func CombineContacts(s Contact, merged []Contact, fields map[string]int64, defs []customfield.Definition) Contact {
	merged = slices.Clone(merged)
	newestFirst(merged, func(c Contact) (time.Time, int64) { return c.UpdatedAt.Time, c.ID })
	str := func(name string, get func(*Contact) **string) { pick(name, fields, &s, merged, contactID, get, nilStr) }
	str("email", func(c *Contact) **string { return &c.Email })
	str("phone", func(c *Contact) **string { return &c.Phone })
	str("mobile", func(c *Contact) **string { return &c.Mobile })
	str("job_title", func(c *Contact) **string { return &c.JobTitle })
	str("address_street", func(c *Contact) **string { return &c.AddressStreet })
	str("address_city", func(c *Contact) **string { return &c.AddressCity })
	str("address_state", func(c *Contact) **string { return &c.AddressState })
	str("address_zip", func(c *Contact) **string { return &c.AddressZip })
	str("address_country", func(c *Contact) **string { return &c.AddressCountry })
	str("notes", func(c *Contact) **string { return &c.Notes })
	str("source", func(c *Contact) **string { return &c.Source })
	pick("first_name", fields, &s, merged, contactID, func(c *Contact) *string { return &c.FirstName }, noText)
	pick("last_name", fields, &s, merged, contactID, func(c *Contact) *string { return &c.LastName }, noText)
	pick("status", fields, &s, merged, contactID, func(c *Contact) *string { return &c.Status }, noText)
	pick("company_id", fields, &s, merged, contactID, func(c *Contact) **int64 { return &c.CompanyID }, nilID)
	pick("assigned_to", fields, &s, merged, contactID, func(c *Contact) **int64 { return &c.AssignedTo }, nilID)
	tags := []*string{s.Tags}
	for _, c := range merged {
		tags = append(tags, c.Tags)
	}
	s.Tags = unitedTags(tags)
	held := make([]map[string]any, len(merged))
	ids := make([]int64, len(merged))
	for i, c := range merged {
		held[i], ids[i] = c.CustomFields, c.ID
	}
	s.CustomFields = combineCustom(s.CustomFields, held, ids, fields, defs)
	return s
}

// CombineCompanies is CombineContacts for companies.
func CombineCompanies(s Company, merged []Company, fields map[string]int64, defs []customfield.Definition) Company {
	merged = slices.Clone(merged)
	newestFirst(merged, func(c Company) (time.Time, int64) { return c.UpdatedAt.Time, c.ID })
	str := func(name string, get func(*Company) **string) { pick(name, fields, &s, merged, companyID, get, nilStr) }
	pick("name", fields, &s, merged, companyID, func(c *Company) *string { return &c.Name }, noText)
	str("domain", func(c *Company) **string { return &c.Domain })
	str("website", func(c *Company) **string { return &c.Website })
	str("phone", func(c *Company) **string { return &c.Phone })
	str("industry", func(c *Company) **string { return &c.Industry })
	str("address_street", func(c *Company) **string { return &c.AddressStreet })
	str("address_city", func(c *Company) **string { return &c.AddressCity })
	str("address_state", func(c *Company) **string { return &c.AddressState })
	str("address_zip", func(c *Company) **string { return &c.AddressZip })
	str("address_country", func(c *Company) **string { return &c.AddressCountry })
	held := make([]map[string]any, len(merged))
	ids := make([]int64, len(merged))
	for i, c := range merged {
		held[i], ids[i] = c.CustomFields, c.ID
	}
	s.CustomFields = combineCustom(s.CustomFields, held, ids, fields, defs)
	return s
}

// unitedTags joins the records' comma-separated tags, survivor's first,
// each tag once (ignoring case), within the field's length.
func unitedTags(all []*string) *string {
	var out []string
	seen := map[string]bool{}
	n := 0
	for _, t := range all {
		if t == nil {
			continue
		}
		for _, tag := range strings.Split(validate.Tags(*t), ",") {
			k := strings.ToLower(tag)
			if tag == "" || seen[k] {
				continue
			}
			if n+len(tag)+len(out) > validate.MaxString {
				continue
			}
			seen[k] = true
			out = append(out, tag)
			n += len(tag)
		}
	}
	if len(out) == 0 {
		return nil
	}
	s := strings.Join(out, ",")
	return &s
}

// combineCustom is the custom fields the survivor holds: a multi-enum
// field unites every record's options (survivor's first); another takes
// the chosen record's value, else the survivor's, else the newest
// merged record's (held is newest first, ids their ids).
func combineCustom(s map[string]any, held []map[string]any, ids []int64, fields map[string]int64, defs []customfield.Definition) map[string]any {
	out := make(map[string]any, len(s))
	for k, v := range s {
		if v != nil {
			out[k] = v
		}
	}
	for _, d := range defs {
		if d.Type == customfield.MultiEnum {
			var opts []string
			for _, h := range append([]map[string]any{s}, held...) {
				for _, o := range options(h[d.Name]) {
					if !slices.Contains(opts, o) {
						opts = append(opts, o)
					}
				}
			}
			if len(opts) > 0 {
				out[d.Name] = opts
			}
			continue
		}
		if src, ok := fields[customPrefix+d.Name]; ok {
			if i := slices.Index(ids, src); i >= 0 {
				if v := held[i][d.Name]; v != nil {
					out[d.Name] = v
				} else {
					delete(out, d.Name)
				}
			}
			continue
		}
		if out[d.Name] != nil {
			continue
		}
		for _, h := range held {
			if v := h[d.Name]; v != nil {
				out[d.Name] = v
				break
			}
		}
	}
	return out
}

// options are a held multi-enum value's options.
func options(v any) []string {
	switch x := v.(type) {
	case []string:
		return x
	case []any:
		out := make([]string, 0, len(x))
		for _, o := range x {
			if s, ok := o.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}
