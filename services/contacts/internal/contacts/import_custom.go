package contacts

import (
	"context"
	"strconv"
	"strings"

	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/csvx"
	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/pkg/validate"
)

// CustomPrefix starts the CSV column name of a custom field (cf.<name>):
// a header that names the field whatever its label, and the mapping's
// target for it.
const CustomPrefix = "cf."

// CustomColumn is one custom field in the contact CSV.
type CustomColumn struct {
	Def customfield.Definition
	// Header is what the template and the export write: the label, or
	// cf.<name> where the label would be read as another column (it
	// folds, as csvx compares headers, to a built-in column's name, to a
	// header other systems give a built-in column, to an earlier field's
	// label or to a cf.<name>) or folds to nothing. An exported file so
	// always imports back into the same fields, and another system's file
	// imports as it does without custom fields.
	Header string
}

// Column is the column's csvx name, cf.<name>.
func (c CustomColumn) Column() string { return CustomPrefix + c.Def.Name }

// labelled reports whether the header is the label, which the import
// then recognises as well as cf.<name>.
func (c CustomColumn) labelled() bool { return c.Header != c.Column() }

// CustomColumns lays defs (in their order: position, then name) out as CSV
// columns.
func CustomColumns(defs []customfield.Definition) []CustomColumn {
	taken := map[string]bool{csvx.Normalize(csvx.FullNameField): true}
	for _, l := range csvx.Labels(csvx.KeyFullName) {
		taken[csvx.Normalize(l)] = true
	}
	for _, c := range ImportColumns {
		key := c.Labels
		if key == "" {
			key = c.Name
		}
		for _, h := range append(append([]string{c.Name}, csvx.Labels(key)...), c.Aliases...) {
			taken[csvx.Normalize(h)] = true
		}
	}
	for _, d := range defs {
		taken[csvx.Normalize(CustomPrefix+d.Name)] = true
	}
	out := make([]CustomColumn, len(defs))
	for i, d := range defs {
		out[i] = CustomColumn{Def: d, Header: CustomPrefix + d.Name}
		if k := csvx.Normalize(d.Label); k != "" && !taken[k] {
			taken[k] = true
			out[i].Header = d.Label
		}
	}
	return out
}

// importColumns are the columns an import with custom fields reads: a
// label never folds to a header of a built-in column (see CustomColumns),
// so the order does not decide between them.
func importColumns(custom []CustomColumn) []csvx.Column {
	if len(custom) == 0 {
		return ImportColumns
	}
	cols := make([]csvx.Column, 0, len(custom)+len(ImportColumns))
	for _, c := range custom {
		col := csvx.Column{Name: c.Column()}
		if c.labelled() {
			col.Aliases = []string{c.Def.Label}
		}
		cols = append(cols, col)
	}
	return append(cols, ImportColumns...)
}

// customReader reads the custom-field cells of an import's rows.
type customReader struct {
	// cols are the file's custom columns and the required fields it
	// lacks (every row then misses them).
	cols []CustomColumn
	// seen holds, per unique field, the first row of each value.
	seen map[string]map[string]int
}

func newCustomReader(custom []CustomColumn, has func(string) bool) *customReader {
	cr := &customReader{seen: map[string]map[string]int{}}
	for _, c := range custom {
		if has(c.Column()) || c.Def.Required {
			cr.cols = append(cr.cols, c)
		}
		if c.Def.Unique {
			cr.seen[c.Def.Name] = map[string]int{}
		}
	}
	return cr
}

// values parses rec's custom cells by type; a bad or missing required
// one is added to v under its column, cf.<name>. nil when the row holds
// none (the store then writes it as a row without custom fields).
func (cr *customReader) values(rec csvx.Record, v *validate.Errors) customfield.Values {
	var out customfield.Values
	for _, c := range cr.cols {
		cell := rec.Get(c.Column())
		if strings.TrimSpace(cell) == "" {
			if c.Def.Required {
				v.Add(c.Column(), "is required")
			}
			continue
		}
		val, msg := customfield.Parse(c.Def, cell, nil)
		if msg != "" {
			v.Add(c.Column(), "%s", msg)
			continue
		}
		if out == nil {
			out = customfield.Values{}
		}
		out[c.Def.Name] = val
	}
	return out
}

// duplicate is the reason a valid row repeats an earlier row's value of
// a unique field ("" when it does not); otherwise the row's values are
// remembered.
func (cr *customReader) duplicate(row int, vals customfield.Values) string {
	if len(cr.seen) == 0 || vals == nil {
		return ""
	}
	for _, c := range cr.cols {
		seen := cr.seen[c.Def.Name]
		v, ok := vals[c.Def.Name]
		if seen == nil || !ok {
			continue
		}
		if first, dup := seen[customfield.Cell(v)]; dup {
			return DuplicateCustom(c.Def.Name, v, "already in row "+strconv.Itoa(first))
		}
	}
	for name, seen := range cr.seen {
		if v, ok := vals[name]; ok {
			seen[customfield.Cell(v)] = row
		}
	}
	return ""
}

// DuplicateCustom is the row error of a unique field's value held
// elsewhere: "duplicate cf.<name> <value> (<where>)", as a repeated
// email is reported.
func DuplicateCustom(name string, v any, where string) string {
	return "duplicate " + CustomPrefix + name + " " + customfield.Cell(v) + " (" + where + ")"
}

// CSVColumns are the contacts' custom fields as CSV columns, for the
// template and the export.
func (s *Service) CSVColumns(ctx context.Context) ([]CustomColumn, error) {
	defs, err := s.Definitions(ctx, propertyapi.Contacts)
	if err != nil {
		return nil, err
	}
	return CustomColumns(defs), nil
}
