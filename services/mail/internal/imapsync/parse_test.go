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
	})
}
