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
