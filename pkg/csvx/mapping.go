package csvx

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/opencrm/crm/pkg/fault"
)

// MappingField is the form field of an import's column mapping.
const MappingField = "mapping"

// MaxMappingBytes bounds the mapping form field.
const MaxMappingBytes = 64 << 10

// ParseMapping reads the mapping form field: a JSON object from header
// label to column name, "" to ignore the column. Anything else is a 422
// on field "mapping". The names are checked against the columns by Open.
func ParseMapping(s string) (map[string]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var m map[string]string
	if err := json.Unmarshal([]byte(s), &m); err != nil || m == nil {
		return nil, fault.Invalid(MappingField, `must be a JSON object from column label to field name, e.g. {"Mailing City":"address_city","Fax":""}`)
	}
	return m, nil
}

// candidate is one header cell that could fill a column.
type candidate struct {
	name string
	rank int
}

// match maps the header onto cols: the mapping first, then for every
// column still open the best-ranked label of the table (canonical name
// first, then the table's order, then Aliases); ties go to the leftmost
// cell. Cells nothing reads are reported as ignored.
func match(header []string, cols []Column, opt Options) (*layout, error) {
	l := &layout{index: map[string]int{}, split: -1}
	known := map[string]bool{}
	lookup := map[string]candidate{}
	add := func(label, name string, rank int) {
		if k := Normalize(label); k != "" {
			if _, taken := lookup[k]; !taken {
				lookup[k] = candidate{name, rank}
			}
		}
	}
	for _, c := range cols {
		known[c.Name] = true
		add(c.Name, c.Name, 0)
		key := c.Labels
		if key == "" {
			key = c.Name
		}
		for i, lb := range labels[key] {
			add(lb, c.Name, i+1)
		}
		for i, a := range c.Aliases {
			add(a, c.Name, 1000+i)
		}
	}
	if opt.FullName != nil && !known[FullNameField] {
		known[FullNameField] = true
		for i, lb := range labels[KeyFullName] {
			add(lb, FullNameField, i+1)
		}
	}

	used := make([]bool, len(header))  // cells a column reads
	taken := make([]bool, len(header)) // cells the mapping decided
	if err := applyMapping(header, opt.Mapping, known, l, used, taken); err != nil {
		return nil, err
	}
	best := map[string]candidate{}
	cell := map[string]int{}
	for i, h := range header {
		if taken[i] {
			continue
		}
		c, ok := lookup[Normalize(h)]
		if !ok {
			continue
		}
		if _, mapped := l.index[c.name]; mapped {
			continue
		}
		if b, seen := best[c.name]; !seen || c.rank < b.rank {
			best[c.name], cell[c.name] = c, i
		}
	}
	for name, i := range cell {
		l.index[name], used[i] = i, true
	}

	if fn := opt.FullName; fn != nil {
		i, ok := l.index[FullNameField]
		_, hasFirst := l.index[fn.First]
		_, hasLast := l.index[fn.Last]
		if ok && !hasFirst && !hasLast {
			l.split, l.first, l.last = i, fn.First, fn.Last
		} else if ok {
			used[i] = false // a full name beside first/last columns is not read
		}
		delete(l.index, FullNameField)
	}
	for i, h := range header {
		if !used[i] && strings.TrimSpace(h) != "" {
			l.ignored = append(l.ignored, h)
		}
	}

	var missing []string
	for _, c := range cols {
		if _, ok := l.index[c.Name]; c.Required && !ok && !(l.split >= 0 && (c.Name == l.first || c.Name == l.last)) {
			missing = append(missing, c.Name)
		}
	}
	if len(missing) > 0 {
		return nil, Invalid("the header is missing the required column(s): " + strings.Join(missing, ", "))
	}
	return l, nil
}

// applyMapping places the mapped cells. Every error names what is wrong:
// an unknown field, a label the header lacks, two labels for one field.
func applyMapping(header []string, m map[string]string, known map[string]bool, l *layout, used, taken []bool) error {
	if len(m) == 0 {
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys) // deterministic messages
	byField := map[string]string{}
	for _, label := range keys {
		field := strings.TrimSpace(m[label])
		if field != "" && !known[field] {
			return fault.Invalid(MappingField, fmt.Sprintf("column %q maps to %q, which is not a field (fields: %s)", label, field, fieldList(known)))
		}
		norm := Normalize(label)
		i := slices.IndexFunc(header, func(h string) bool { return norm != "" && Normalize(h) == norm })
		if i < 0 {
			return fault.Invalid(MappingField, fmt.Sprintf("column %q is not in the file's header", label))
		}
		taken[i] = true
		if field == "" {
			continue
		}
		if other, dup := byField[field]; dup {
			return fault.Invalid(MappingField, fmt.Sprintf("columns %q and %q both map to field %q", other, label, field))
		}
		byField[field] = label
		l.index[field], used[i] = i, true
	}
	return nil
}

func fieldList(known map[string]bool) string {
	out := make([]string, 0, len(known))
	for k := range known {
		out = append(out, k)
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}
