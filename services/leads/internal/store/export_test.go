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

// WithSearchWalked is a copy of s that calls walked with the outcome of
// each search's walk (whether it found the page), so a test can tell the
// walk from one pass over the matches, which answer alike.
func (s *Store) WithSearchWalked(walked func(found bool)) *Store {
	c := *s
	c.searchWalked = walked
	return &c
}
