package store

// Cubed exposes cubed to the external tests, so they can tell which
// filters the count cube answers.
var Cubed = cubed
