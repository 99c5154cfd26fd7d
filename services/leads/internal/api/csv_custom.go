package api

// The leads' custom fields in the CSV: one column per definition in the
// template and the export, read back by the import.

import (
	"context"
	"strings"

	"github.com/opencrm/crm/pkg/csvx"
	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/services/leads/internal/leads"
)

// CustomPrefix starts a custom field's CSV column name, cf.<name>: a
// header that names the field whatever its label, and the target of a
// mapping to it.
const CustomPrefix = "cf."

// exportOnly are the export's columns the import does not read; a label
// folding to one would read them back into the field.
var exportOnly = []string{"id", "created_at", "updated_at"}

// customColumn is one custom field in the lead CSV.
type customColumn struct {
	def customfield.Definition
	// header is what the template and the export write: the label, or
	// cf.<name> where the label would be read as another column (it
	// folds, as csvx compares headers, to a built-in or export column's
	// name, to a header other systems give a built-in column, to an
	// earlier field's label or to a cf.<name>) or folds to nothing. An
	// exported file so imports back into the same fields, and another
	// system's file imports as it does without custom fields.
	header string
}

// name is the column's csvx name, cf.<name>.
func (c customColumn) name() string { return CustomPrefix + c.def.Name }

// customColumns lays defs (in their order: position, then name) out as
// CSV columns.
func customColumns(defs []customfield.Definition) []customColumn {
	taken := map[string]bool{}
	for _, h := range builtinHeaders() {
		taken[csvx.Normalize(h)] = true
	}
	for _, d := range defs {
		taken[csvx.Normalize(CustomPrefix+d.Name)] = true
	}
	out := make([]customColumn, len(defs))
	for i, d := range defs {
		out[i] = customColumn{def: d, header: CustomPrefix + d.Name}
		if k := csvx.Normalize(d.Label); k != "" && !taken[k] {
			taken[k] = true
			out[i].header = d.Label
		}
	}
	return out
}

// builtinHeaders are the headers the import reads as a built-in column:
// the columns' names and the labels of the other systems' exports csvx
// knows for them (full names included), and the export's own columns.
func builtinHeaders() []string {
	h := append([]string{csvx.FullNameField}, exportOnly...)
	h = append(h, csvx.Labels(csvx.KeyFullName)...)
	for _, c := range CSVColumns {
		key := c.Labels
		if key == "" {
			key = c.Name
		}
		h = append(h, c.Name)
		h = append(h, csvx.Labels(key)...)
		h = append(h, c.Aliases...)
	}
	return h
}

// csvHeader is the template's header line and the export's middle
// columns: the built-in columns, then one per custom field. A label is an
// admin's text, so it is escaped as a cell is (the import still reads it:
// header matching ignores the apostrophe).
func csvHeader(custom []customColumn) []string {
	h := append([]string(nil), CSVHeader...)
	for _, c := range custom {
		h = append(h, csvx.Escape(c.header))
	}
	return h
}

// importColumns are the columns an import reads: the built-in ones, then
// the custom fields, read by cf.<name> and by a label no built-in column
// reads (customColumns).
func importColumns(custom []customColumn) []csvx.Column {
	if len(custom) == 0 {
		return CSVColumns
	}
	cols := append(make([]csvx.Column, 0, len(custom)+len(CSVColumns)), CSVColumns...)
	for _, c := range custom {
		col := csvx.Column{Name: c.name()}
		if c.header != c.name() {
			col.Aliases = []string{c.def.Label}
		}
		cols = append(cols, col)
	}
	return cols
}

// maxIdentityAsks bounds the users an import asks identity about (the
// ids the directory read model does not hold): past it, an id the read
// model lacks is no user, so a file of made-up ids costs at most this
// many calls. The read model lacks only users created moments ago.
const maxIdentityAsks = 100

// customReader reads the custom cells of an import's rows.
type customReader struct {
	// cols are the file's custom columns and the required fields it
	// lacks (every row then misses them).
	cols []customColumn
	// listed answers from the directory read model; exists also asks
	// identity on a miss (as the API's writes check a user).
	listed, exists leads.UserChecker
	asks           int
	// known caches the users checked: one look-up per distinct id.
	known map[int64]bool
}

func newCustomReader(custom []customColumn, has func(string) bool, listed, exists leads.UserChecker) *customReader {
	cr := &customReader{listed: listed, exists: exists, known: map[int64]bool{}}
	for _, c := range custom {
		if has(c.name()) || c.def.Required {
			cr.cols = append(cr.cols, c)
		}
	}
	return cr
}

// values parses a row's custom cells by type (customfield.Parse, as the
// API reads a value) and returns the values it holds, nil for none, and
// the row's problems, each named by its column (cf.<name>). Only a
// failed user look-up is an error.
func (cr *customReader) values(ctx context.Context, rec csvx.Record) (customfield.Values, []fault.Field, error) {
	var out customfield.Values
	var bad []fault.Field
	for _, c := range cr.cols {
		cell := rec.Get(c.name())
		if strings.TrimSpace(cell) == "" {
			if c.def.Required {
				bad = append(bad, fault.Field{Field: c.name(), Message: "is required"})
			}
			continue
		}
		v, msg := customfield.Parse(c.def, cell, nil)
		if msg == "" && c.def.Type == customfield.User {
			ok, err := cr.user(ctx, v.(int64))
			if err != nil {
				return nil, nil, err
			}
			if !ok {
				msg = "must be the id of an existing user"
			}
		}
		if msg != "" {
			bad = append(bad, fault.Field{Field: c.name(), Message: msg})
			continue
		}
		if out == nil {
			out = customfield.Values{}
		}
		out[c.def.Name] = v
	}
	return out, bad, nil
}

func (cr *customReader) user(ctx context.Context, id int64) (bool, error) {
	if ok, seen := cr.known[id]; seen {
		return ok, nil
	}
	ok, err := cr.listed(ctx, id)
	if err == nil && !ok && cr.asks < maxIdentityAsks {
		cr.asks++
		ok, err = cr.exists(ctx, id)
	}
	if err != nil {
		return false, err
	}
	cr.known[id] = ok
	return ok, nil
}
