package imapsync

import (
	"strconv"
	"strings"
	"time"
)

// obsoleteZones are the named zones RFC 5322 section 4.3 defines. Go's
// time.Parse cannot be trusted with them: it gives a zone abbreviation the
// offset the process's local zone knows for it, and zero otherwise, so
// "10:00 EST" was stored as 10:00Z on a server running in UTC.
var obsoleteZones = map[string]int{
	"UT": 0, "GMT": 0, "Z": 0,
	"EST": -5, "EDT": -4,
	"CST": -6, "CDT": -5,
	"MST": -7, "MDT": -6,
	"PST": -8, "PDT": -7,
}

// parseDate reads a Date header in RFC 5322's syntax (section 3.3) and the
// obsolete syntax mailers still write (section 4.3): an optional day name,
// one- or two-digit days, two- and three-digit years, missing seconds,
// case-insensitive names, comments and folding anywhere. The result is in
// UTC.
//
// Zones: "+hhmm"/"-hhmm" (also "+hh:mm" and "+hh"), the named zones above, and
// "UTC". Any other alphabetic zone, including the military letters other
// than Z (which RFC 822 defined with the wrong sign), has no known offset:
// RFC 5322 says to read it as -0000, so the time is taken as UTC. A date
// without a zone, or one that is not a date at all, is refused (ok false)
// and the caller falls back to the server's INTERNALDATE, which is
// exact, instead of guessing.
func parseDate(s string) (t time.Time, ok bool) {
	tok := dateTokens(s)
	if len(tok) > 0 && isAlpha(tok[0]) && month(tok[0]) == 0 {
		tok = tok[1:] // day name; a wrong one is ignored like a comment
	}
	if len(tok) < 5 {
		return time.Time{}, false
	}
	day, ok1 := number(tok[0], 1, 2)
	mon := month(tok[1])
	year, ok2 := number(tok[2], 2, 4)
	clock, ok3 := clockTime(tok[3])
	zone, ok4 := zoneOffset(tok[4])
	if !ok1 || mon == 0 || !ok2 || !ok3 || !ok4 {
		return time.Time{}, false
	}
	switch len(tok[2]) {
	case 2: // RFC 5322 4.3: 00-49 are 2000-2049, 50-99 are 1950-1999
		if year < 50 {
			year += 2000
		} else {
			year += 1900
		}
	case 3:
		year += 1900
	}
	t = time.Date(year, mon, day, 0, 0, 0, 0, time.UTC)
	if t.Day() != day { // 31 Feb
		return time.Time{}, false
	}
	// Tokens after the zone ("-0500 EST" without parentheses) are ignored.
	return t.Add(clock - zone), true
}

// dateTokens drops comments and splits the rest at white space and commas;
// white space around a ':' of the time of day is dropped (obs-time).
func dateTokens(s string) []string {
	var b strings.Builder
	depth := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case depth > 0 && c == '\\':
			i++ // quoted-pair inside a comment
		case c == '(':
			depth++
		case depth > 0 && c == ')':
			depth--
			b.WriteByte(' ')
		case depth == 0:
			b.WriteByte(c)
		}
	}
	fields := strings.FieldsFunc(b.String(), func(r rune) bool {
		return r == ',' || r == ' ' || r == '\t' || r == '\r' || r == '\n'
	})
	var out []string
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		// Join "09 : 55 : 06" and "09: 55" back into one token.
		for i+1 < len(fields) && (strings.HasSuffix(f, ":") || strings.HasPrefix(fields[i+1], ":")) {
			i++
			f += fields[i]
		}
		out = append(out, f)
	}
	return out
}

// clockTime reads "hh:mm" or "hh:mm:ss" as the time since midnight; a leap
// second 60 is kept and carries into the next minute.
func clockTime(s string) (time.Duration, bool) {
	parts := strings.Split(s, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return 0, false
	}
	h, ok1 := number(parts[0], 1, 2)
	m, ok2 := number(parts[1], 2, 2)
	sec, ok3 := 0, true
	if len(parts) == 3 {
		sec, ok3 = number(parts[2], 2, 2)
	}
	if !ok1 || !ok2 || !ok3 || h > 23 || m > 59 || sec > 60 {
		return 0, false
	}
	return time.Duration(h)*time.Hour + time.Duration(m)*time.Minute + time.Duration(sec)*time.Second, true
}

// zoneOffset reads a zone as its offset east of UTC.
func zoneOffset(s string) (time.Duration, bool) {
	if isAlpha(s) {
		// Known names, else -0000 (see parseDate); "UTC" is not in the
		// RFC but means what it says.
		return time.Duration(obsoleteZones[strings.ToUpper(s)]) * time.Hour, true
	}
	if len(s) < 3 || (s[0] != '+' && s[0] != '-') {
		return 0, false
	}
	digits := strings.Replace(s[1:], ":", "", 1)
	if len(digits) == 2 {
		digits += "00" // "+01", as some mailers abbreviate +0100
	}
	if len(digits) != 4 {
		return 0, false
	}
	h, ok1 := number(digits[:2], 2, 2)
	m, ok2 := number(digits[2:], 2, 2)
	if !ok1 || !ok2 || h > 23 || m > 59 {
		return 0, false
	}
	off := time.Duration(h)*time.Hour + time.Duration(m)*time.Minute
	if s[0] == '-' {
		off = -off
	}
	return off, true
}

var months = [...]string{"january", "february", "march", "april", "may", "june",
	"july", "august", "september", "october", "november", "december"}

// month reads an English month name, abbreviated to at least three
// letters ("Nov", "Sept", "November"), in any case; 0 when it is none.
func month(s string) time.Month {
	s = strings.ToLower(s)
	if len(s) < 3 {
		return 0
	}
	for i, name := range months {
		if strings.HasPrefix(name, s) {
			return time.Month(i + 1)
		}
	}
	return 0
}

// number reads an unsigned decimal of minDigits to maxDigits digits.
func number(s string, minDigits, maxDigits int) (int, bool) {
	if len(s) < minDigits || len(s) > maxDigits {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}

func isAlpha(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i] | 0x20; c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}
