package customfield

import (
	"encoding/json"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/list/listsql"
	"github.com/opencrm/crm/pkg/validate"
)

// Op is a filter's comparison.
type Op string

// Filter comparisons: cf[name]=v, cf[name][gte]=, [lte]=, [empty]=.
const (
	Eq    Op = "eq"
	Gte   Op = "gte"
	Lte   Op = "lte"
	Empty Op = "empty"
)

// Filter is one custom-field condition of a list, checked against the
// definitions: Values hold canonical values (one for a range, the any-of
// list of an enum, the all-of list of a multi_enum).
type Filter struct {
	Def    Definition
	Op     Op
	Values []any
	// IsEmpty is the wanted answer of an Empty filter.
	IsEmpty bool
}

// Query is the custom-field part of a list request: its filters and,
// when the list is sorted by a custom field, that field.
type Query struct {
	Filters []Filter
	Sort    *Definition
}

// IsEnumEquality reports whether f is an enum field's equality: the one
// custom-field filter a record's derived enums column answers (and with
// it the count cubes, the sort indexes that carry the column and the
// search projections), where any other reads custom_fields itself.
func (f Filter) IsEnumEquality() bool { return f.Op == Eq && f.Def.Type == Enum }

// EnumEqualitiesOnly reports whether every filter of q is an enum
// equality (IsEnumEquality); true without filters. The sort is not
// considered.
func (q Query) EnumEqualitiesOnly() bool {
	for _, f := range q.Filters {
		if !f.IsEnumEquality() {
			return false
		}
	}
	return true
}

// SortPrefix starts a custom-field sort key: sort_by=cf.<name>.
const SortPrefix = propertyapi.SortPrefix

var paramRE = regexp.MustCompile(`^cf\[([^\]]*)\](?:\[([a-z]*)\])?$`)

// rangeTypes may take gte and lte.
var rangeTypes = []Type{Number, Date, DateTime}

// ParseFilters reads the cf[...] parameters of a list's query string and
// a cf.<name> sort key against the object's definitions. It returns every
// problem at once, each named by its parameter.
func ParseFilters(q url.Values, sortKey string, defs []Definition) (Query, error) {
	var out Query
	var errs validate.Errors
	byName := make(map[string]Definition, len(defs))
	for _, d := range defs {
		byName[d.Name] = d
	}
	params := make([]string, 0)
	for p := range q {
		if strings.HasPrefix(p, "cf[") {
			params = append(params, p)
		}
	}
	slices.Sort(params)
	for _, p := range params {
		m := paramRE.FindStringSubmatch(p)
		if m == nil {
			errs.Add(p, "must be cf[<name>], cf[<name>][gte], cf[<name>][lte] or cf[<name>][empty]")
			continue
		}
		d, ok := byName[m[1]]
		if !ok {
			errs.Add(p, "is not a custom field of this record type")
			continue
		}
		f, msg := filter(d, Op(m[2]), q.Get(p))
		if msg != "" {
			errs.Add(p, "%s", msg)
			continue
		}
		out.Filters = append(out.Filters, f)
	}
	if name, ok := strings.CutPrefix(sortKey, SortPrefix); ok {
		d, found := byName[name]
		switch {
		case !found:
			errs.Add("sort_by", "%s is not a custom field of this record type", sortKey)
		case !propertyapi.Sortable(d.Type):
			errs.Add("sort_by", "a %s field cannot be sorted by", d.Type)
		default:
			out.Sort = &d
		}
	}
	if err := errs.Err(); err != nil {
		return Query{}, err
	}
	return out, nil
}

func filter(d Definition, op Op, raw string) (Filter, string) {
	f := Filter{Def: d, Op: op}
	switch op {
	case "":
		f.Op = Eq
		if d.Type == Textarea {
			return f, "a textarea field cannot be filtered by value (use [empty])"
		}
		parts := []string{raw}
		if d.Type == Enum || d.Type == MultiEnum {
			parts = strings.Split(raw, ",")
		}
		for _, p := range parts {
			// A filter may name an archived option: records still hold it.
			v, msg := Parse(d, p, strings.TrimSpace(p))
			if msg != "" {
				return f, msg
			}
			if vs, ok := v.([]string); ok {
				for _, s := range vs {
					f.Values = append(f.Values, s)
				}
				continue
			}
			f.Values = append(f.Values, v)
		}
	case Gte, Lte:
		if !slices.Contains(rangeTypes, d.Type) {
			return f, "a range applies only to number, date and datetime fields"
		}
		v, msg := Parse(d, raw, nil)
		if msg != "" {
			return f, msg
		}
		f.Values = []any{v}
	case Empty:
		switch raw {
		case "true":
			f.IsEmpty = true
		case "false":
		default:
			return f, "must be true or false"
		}
	default:
		return f, "must be cf[<name>], cf[<name>][gte], cf[<name>][lte] or cf[<name>][empty]"
	}
	return f, ""
}

// Column is a record table's custom_fields column as a query spells it
// ("custom_fields", "c.custom_fields"): trusted code, never input.
type Column string

// text is the SQL of a field's value as text, json as jsonb. The name is
// a literal: a definition's name is checked by ValidName, so it cannot
// break out.
func (c Column) text(name string) string { return "(" + string(c) + " ->> " + literal(name) + ")" }

func (c Column) json(name string) string { return "(" + string(c) + " -> " + literal(name) + ")" }

func literal(name string) string {
	if !ValidName(name) {
		panic("customfield: invalid name in SQL: " + name)
	}
	return "'" + name + "'"
}

// Sorts returns base with the sort key of d (cf.<name>) added, for a list
// sorted by a custom field; base is returned as is when d is nil.
func (c Column) Sorts(base listsql.Sorts, d *Definition) listsql.Sorts {
	if d == nil {
		return base
	}
	by := make(map[string]string, len(base.By)+1)
	for k, v := range base.By {
		by[k] = v
	}
	by[SortPrefix+d.Name] = c.Value(*d)
	base.By = by
	return base
}

// Value is the SQL expression of a field's value in its order: numeric
// for numbers and users, text otherwise (dates and datetimes are stored
// in fixed-width forms that sort as text).
func (c Column) Value(d Definition) string {
	switch d.Type {
	case Number:
		return c.text(d.Name) + "::numeric"
	case User:
		return c.text(d.Name) + "::bigint"
	}
	return c.text(d.Name)
}

// Where adds the filters to w, every value a placeholder.
func (c Column) Where(w *listsql.Where, filters []Filter) {
	for _, f := range filters {
		switch f.Op {
		case Empty:
			cond := "(" + string(c) + " ? " + w.Arg(f.Def.Name) + ")"
			if f.IsEmpty {
				cond = "NOT " + cond
			}
			w.And(cond)
		case Gte:
			w.And(c.Value(f.Def) + " >= " + w.Arg(sqlValue(f.Values[0])) + c.cast(f.Def))
		case Lte:
			w.And(c.Value(f.Def) + " <= " + w.Arg(sqlValue(f.Values[0])) + c.cast(f.Def))
		case Eq:
			switch f.Def.Type {
			case MultiEnum:
				// As JSON text: a statement run without a prepare step has
				// no parameter type to encode a Go list by.
				list, _ := json.Marshal(f.Values)
				w.And(c.json(f.Def.Name) + " @> " + w.Arg(string(list)) + "::jsonb")
			case Number:
				w.And(c.Value(f.Def) + " = " + w.Arg(sqlValue(f.Values[0])))
			default:
				texts := make([]string, len(f.Values))
				for i, v := range f.Values {
					texts[i] = Cell(v)
				}
				if len(texts) == 1 {
					w.And(c.text(f.Def.Name) + " = " + w.Arg(texts[0]))
				} else {
					w.And(c.text(f.Def.Name) + " = ANY(" + w.Arg(texts) + "::text[])")
				}
			}
		}
	}
}

// cast types a placeholder compared with Value(d).
func (c Column) cast(d Definition) string {
	if d.Type == Number {
		return "::numeric"
	}
	return ""
}

// sqlValue is a canonical value as a query argument: numbers and users as
// text PostgreSQL casts exactly, the rest as they are.
func sqlValue(v any) any {
	switch v.(type) {
	case string, bool:
		return v
	}
	return Cell(v)
}
