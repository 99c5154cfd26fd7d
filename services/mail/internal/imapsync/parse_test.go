package imapsync

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file string
		want Parsed
	}{
		{"plain.eml", Parsed{
			MessageID: "<plain-1@example.com>", From: "ann@example.com",
			To: []string{"bob@example.org", "Carol@Example.org"}, Cc: []string{"dave@example.net"},
			Subject: "Plain hello", Body: "Hello Bob,\n\nthis is   plain.",
			Date: time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC),
		}},
		{"alternative.eml", Parsed{
			MessageID: "<alt-1@example.org>", From: "bob@example.org", To: []string{"ann@example.com"},
			Subject: "Grüße", Body: "Grüße aus Köln, this line is soft wrapped.",
			Date: time.Date(2026, 3, 3, 10, 0, 0, 0, time.UTC),
		}},
		{"latin1.eml", Parsed{
			MessageID: "<latin1-1@example.fr>", From: "rene@example.fr", To: []string{"ann@example.com"},
			Subject: "Résumé", Body: "Café à Paris, déjà vu.",
			Date: time.Date(2026, 3, 4, 9, 0, 0, 0, time.UTC),
		}},
		{"broken.eml", Parsed{
			MessageID: "<broken-1@example.com>", From: "eve@example.com", To: []string{"ann@example.com"},
			Subject: "Broken", Body: "Readable part.",
			Date: time.Date(2026, 3, 5, 10, 0, 0, 0, time.UTC),
		}},
		{"html-noid.eml", Parsed{
			MessageID: "<" + syntheticID(readFixture(t, "html-noid.eml")) + ">", From: "ann@example.com", To: []string{"frank@example.com"},
			Subject: "HTML only, no id", Body: "Hi & welcome\nSecond\nline",
			Date: time.Date(2026, 3, 6, 10, 0, 0, 0, time.UTC),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			got := Parse(readFixture(t, tt.file))
			if diff := cmp.Diff(tt.want, got, cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); diff != "" {
				t.Errorf("Parse (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseGarbage(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{"", "no header at all", "\x00\xff\xfe", "Subject: x\r\n\r\n" + strings.Repeat("a", 10)} {
		p := Parse([]byte(raw))
		if p.MessageID == "" {
			t.Errorf("Parse(%q) has no message id", raw)
		}
		if strings.ContainsRune(p.Body, 0) {
			t.Errorf("Parse(%q) kept a NUL byte", raw)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, name := range []string{"plain.eml", "alternative.eml", "latin1.eml", "broken.eml", "html-noid.eml"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		p := Parse(raw)
		if p.MessageID == "" {
			t.Fatal("no message id")
		}
		if strings.ContainsRune(p.Body+p.Subject+p.MessageID, 0) {
			t.Fatal("NUL byte kept")
		}
		if !p.Date.IsZero() && p.Date.Location() != time.UTC {
			t.Fatalf("Date %s is not in UTC", p.Date)
		}
	})
}

// TestParseDate reads the Date header of a message in every zone RFC 5322
// names and in forms real mailers write. Before parseDate, net/mail gave a
// named zone the offset of the process's local zone (none in UTC), so
// "10:00 EST" was 10:00Z, "Z" and the military zones were refused, and
// two-digit years 50-68 were read as 2050-2068.
func TestParseDate(t *testing.T) {
	t.Parallel()
	at := func(s string) time.Time {
		t.Helper()
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	tests := []struct {
		date string
		want time.Time // zero: refused, the sync uses the server's date
	}{
		// The obsolete named zones of RFC 5322 section 4.3.
		{"Mon, 2 Mar 2026 10:00:00 UT", at("2026-03-02T10:00:00Z")},
		{"Mon, 2 Mar 2026 10:00:00 GMT", at("2026-03-02T10:00:00Z")},
		{"Mon, 2 Mar 2026 10:00:00 Z", at("2026-03-02T10:00:00Z")},
		{"Mon, 2 Mar 2026 10:00:00 EST", at("2026-03-02T15:00:00Z")},
		{"Mon, 2 Mar 2026 10:00:00 EDT", at("2026-03-02T14:00:00Z")},
		{"Mon, 2 Mar 2026 10:00:00 CST", at("2026-03-02T16:00:00Z")},
		{"Mon, 2 Mar 2026 10:00:00 CDT", at("2026-03-02T15:00:00Z")},
		{"Mon, 2 Mar 2026 10:00:00 MST", at("2026-03-02T17:00:00Z")},
		{"Mon, 2 Mar 2026 10:00:00 MDT", at("2026-03-02T16:00:00Z")},
		{"Mon, 2 Mar 2026 10:00:00 PST", at("2026-03-02T18:00:00Z")},
		{"Mon, 2 Mar 2026 10:00:00 PDT", at("2026-03-02T17:00:00Z")},
		{"Mon, 2 Mar 2026 10:00:00 est", at("2026-03-02T15:00:00Z")},
		// Military letters and unknown names: -0000, the time as UTC.
		{"Mon, 2 Mar 2026 10:00:00 A", at("2026-03-02T10:00:00Z")},
		{"Mon, 2 Mar 2026 10:00:00 M", at("2026-03-02T10:00:00Z")},
		{"Mon, 2 Mar 2026 10:00:00 N", at("2026-03-02T10:00:00Z")},
		{"Mon, 2 Mar 2026 10:00:00 Y", at("2026-03-02T10:00:00Z")},
		{"Mon, 2 Mar 2026 10:00:00 CEST", at("2026-03-02T10:00:00Z")},
		{"Mon, 2 Mar 2026 10:00:00 UTC", at("2026-03-02T10:00:00Z")},
		// Numeric zones.
		{"Mon, 2 Mar 2026 10:00:00 +0100", at("2026-03-02T09:00:00Z")},
		{"Mon, 2 Mar 2026 10:00:00 -0000", at("2026-03-02T10:00:00Z")},
		{"Mon, 2 Mar 2026 10:00:00 +0530", at("2026-03-02T04:30:00Z")},
		{"Mon, 2 Mar 2026 10:00:00 +05:30", at("2026-03-02T04:30:00Z")},
		{"Mon, 2 Mar 2026 10:00:00 +01", at("2026-03-02T09:00:00Z")},
		{"Fri, 31 Dec 9999 23:59:59 -2359", at("9999-12-31T23:59:59-23:59")},
		// Real-world forms.
		{"2 Mar 2026 10:00:00 EST", at("2026-03-02T15:00:00Z")},
		{"Mon, 02 Mar 2026 10:00:00 -0500 (EST)", at("2026-03-02T15:00:00Z")},
		{"Mon, 2 Mar 2026 10:00:00 EST (Eastern Standard Time)", at("2026-03-02T15:00:00Z")},
		{"Mon, 2 Mar 2026 10:00:00 -0500 EST", at("2026-03-02T15:00:00Z")},
		{"Mon, 2 Mar 2026 10:00 EST", at("2026-03-02T15:00:00Z")},
		{"Mon, 2 Mar 26 10:00:00 EST", at("2026-03-02T15:00:00Z")},
		{"Tue, 2 Mar 99 10:00 PST", at("1999-03-02T18:00:00Z")},
		{"1 Jan 55 00:00:00 GMT", at("1955-01-01T00:00:00Z")},
		{"2 Mar 102 10:00:00 GMT", at("2002-03-02T10:00:00Z")},
		{"Mon,2 Mar 2026 10:00:00 CDT", at("2026-03-02T15:00:00Z")},
		{"Monday, 2 March 2026 10:00:00 MDT", at("2026-03-02T16:00:00Z")},
		{"mon, 2 mar 2026 10:00:00 -0500", at("2026-03-02T15:00:00Z")},
		{"Mon, 2 Mar 2026\r\n 10:00:00\r\n\tEST", at("2026-03-02T15:00:00Z")},
		{"Mon, 2 Mar 2026 10 : 00 : 00 EST", at("2026-03-02T15:00:00Z")},
		{"(sent) Mon, 2 Mar 2026 10:00:00 (a (nested \\) comment)) PST", at("2026-03-02T18:00:00Z")},
		{"Sat, 31 Dec 2016 23:59:60 GMT", at("2017-01-01T00:00:00Z")},
		// Refused.
		{"Mon, 2 Mar 2026 10:00:00", time.Time{}},
		{"Tue, 31 Feb 2026 10:00:00 EST", time.Time{}},
		{"Mon, 2 Mar 2026 24:00:00 EST", time.Time{}},
		{"Mon, 2 Mar 2026 10:00:00 +2400", time.Time{}},
		{"Mon, 2 Mar 2026 10:00:00 +1", time.Time{}},
		{"Mon, 2 Mar 12026 10:00:00 EST", time.Time{}},
		{"2026-03-02T10:00:00Z", time.Time{}},
		{"yesterday", time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.date, func(t *testing.T) {
			t.Parallel()
			got := Parse([]byte("Date: " + tt.date + "\r\nSubject: x\r\n\r\nbody\r\n")).Date
			if !got.Equal(tt.want) {
				t.Errorf("Date = %s, want %s", got.UTC().Format(time.RFC3339), tt.want.UTC().Format(time.RFC3339))
			}
		})
	}
}
