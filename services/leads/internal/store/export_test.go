package store

// Cubed exposes cubed to the external tests, so they can tell which
// filters the count cube answers.
var Cubed = cubed

// WithFewMatches is a copy of s that reads a list's matches in one pass
// up to n of them (-1: never), instead of listsql.FewMatches.
func (s *Store) WithFewMatches(n int) *Store {
	c := *s
	c.fewMatches = n
	return &c
}

// SearchFrom exposes searchFrom to the external tests, so they can tell
// which table a search reads its matches from.
var SearchFrom = searchFrom

// The tables searchFrom picks.
const (
	FromLeads      = fromLeads
	FromProjection = fromProjection
)
