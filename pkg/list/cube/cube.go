// Package cube reads a list's exact total from a count cube: a table a
// context's triggers keep of how many records hold each combination of the
// list's low-cardinality equality filters (status, source, owner, enum
// custom fields), at three grains of their creation day: all time, each
// month and each day. Summing the few cube rows a filter matches answers
// any combination of those filters, with or without a date range, in
// milliseconds at any table size, where count(*) reads every matching row.
//
// A cube table has the columns grain ("char": 'a', 'm' or 'd'), period
// (date: '-infinity' for grain 'a', the first of the month for 'm', the
// day for 'd'), the context's dimension columns, and n (a signed delta;
// a key's rows sum to its count until compaction folds them into one).
package cube

import (
	"time"

	"github.com/opencrm/crm/pkg/list/listsql"
)

// Grains of a cube row.
const (
	All   = "a"
	Month = "m"
	Day   = "d"
)

// Count returns the statement summing table's n over the rows matching w
// (conditions on the dimension columns only) whose records were created in
// [from, to), both UTC midnights or nil (unbounded). A range is answered
// by the whole months inside it at grain 'm' and by its days outside those
// months at grain 'd': at most 62 days' rows however wide the range.
func Count(table string, w *listsql.Where, from, to *time.Time) string {
	w.And(period(w, from, to))
	return `SELECT coalesce(sum(n), 0) FROM ` + table + ` ` + w.SQL()
}

// period is the grain and period condition of [from, to).
func period(w *listsql.Where, from, to *time.Time) string {
	if from == nil && to == nil {
		return "grain = '" + All + "'"
	}
	// Unbounded sides become the widest dates PostgreSQL's date keeps
	// that still have a month: no row is created outside them.
	lo, hi := time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(9999, 12, 1, 0, 0, 0, 0, time.UTC)
	if from != nil {
		lo = from.UTC()
	}
	if to != nil {
		hi = to.UTC()
	}
	firstMonth := monthStart(lo)
	if !firstMonth.Equal(lo) {
		firstMonth = firstMonth.AddDate(0, 1, 0)
	}
	lastMonth := monthStart(hi) // months [firstMonth, lastMonth) are whole
	if !firstMonth.Before(lastMonth) {
		return "grain = '" + Day + "' AND period >= " + w.Arg(day(lo)) + "::date AND period < " + w.Arg(day(hi)) + "::date"
	}
	return "((grain = '" + Month + "' AND period >= " + w.Arg(day(firstMonth)) + "::date AND period < " + w.Arg(day(lastMonth)) + "::date)" +
		" OR (grain = '" + Day + "' AND ((period >= " + w.Arg(day(lo)) + "::date AND period < " + w.Arg(day(firstMonth)) + "::date)" +
		" OR (period >= " + w.Arg(day(lastMonth)) + "::date AND period < " + w.Arg(day(hi)) + "::date))))"
}

func monthStart(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
}

// day is t as a date literal's text, which the statement casts: a list
// runs unprepared, with no parameter types to encode a time.Time by.
func day(t time.Time) string { return t.Format(time.DateOnly) }
